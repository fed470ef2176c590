#!/usr/bin/env node
/**
 * Publishes JSON lines to a NATS JetStream subject, one message per non-empty line, each
 * acknowledged by the stream (JetStream publish), with the `nats` client the service uses.
 *
 *   node scripts/nats-publish.mjs [options] <subject> [file|-]      (no file, or `-`: stdin)
 *
 * Options:
 *   --server <url>          the NATS server (default nats://127.0.0.1:4222; env NATS_URL)
 *   --stream <name>         create the stream first if it does not exist (with --subjects)
 *   --subjects <filter>     the stream's subjects when --stream creates it (default: <subject>)
 *   --msg-id-field <field>  send each line's field as its Nats-Msg-Id header (the server drops a
 *                           second message with the same id within the stream's duplicate window)
 *
 * Each line must be a JSON object; a line that is not is refused before anything is published
 * (exit 1, with its line number). Exits 2 on bad arguments, 1 when the server is unreachable
 * (saying which server and what to check) or a message is not acknowledged (no stream takes the
 * subject: create one with --stream). Prints `published N messages to <subject> (stream S, last
 * sequence Q)` on stdout, with how many the stream took as duplicates of messages it held.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { connect, headers } from "nats";

const usage =
  "usage: node scripts/nats-publish.mjs [--server URL] [--stream NAME [--subjects FILTER]] [--msg-id-field FIELD] <subject> [file|-]";

function fail(code, message) {
  process.stderr.write(`nats-publish: ${message}\n`);
  process.exit(code);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      server: { type: "string", default: process.env.NATS_URL ?? "nats://127.0.0.1:4222" },
      stream: { type: "string" },
      subjects: { type: "string" },
      "msg-id-field": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
} catch (e) {
  fail(2, `${e.message}\n${usage}`);
}
const { values: opts, positionals } = parsed;
if (opts.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
if (positionals.length < 1 || positionals.length > 2) fail(2, `give a subject and at most one file\n${usage}`);
if (opts.subjects !== undefined && opts.stream === undefined)
  fail(2, "--subjects needs --stream (the stream it creates)");
const [subject, file = "-"] = positionals;

let text;
try {
  text = readFileSync(file === "-" ? 0 : file, "utf8");
} catch (e) {
  fail(2, e.code === "ENOENT" ? `no such file: ${file}` : `cannot read ${file}: ${e.message}`);
}
const lines = [];
text.split("\n").forEach((line, i) => {
  if (line.trim() === "") return;
  let value;
  try {
    value = JSON.parse(line);
  } catch (e) {
    fail(1, `${file === "-" ? "stdin" : file}:${i + 1}: not JSON (${e.message}): nothing was published`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    fail(1, `${file === "-" ? "stdin" : file}:${i + 1}: not a JSON object: nothing was published`);
  }
  const field = opts["msg-id-field"];
  if (field !== undefined && (value[field] === undefined || value[field] === null)) {
    fail(
      1,
      `${file === "-" ? "stdin" : file}:${i + 1}: no field "${field}" for its Nats-Msg-Id: nothing was published`,
    );
  }
  lines.push({ line, id: field === undefined ? undefined : String(value[field]) });
});

let nc;
try {
  nc = await connect({ servers: opts.server, timeout: 3000, maxReconnectAttempts: 0 });
} catch (e) {
  fail(
    1,
    `cannot reach the NATS server at ${opts.server} (${e.code ?? e.message}): is nats-server running there, with JetStream (nats-server -js)? Give another with --server or NATS_URL. Nothing was published`,
  );
}
try {
  if (opts.stream !== undefined) {
    const jsm = await nc.jetstreamManager();
    try {
      await jsm.streams.info(opts.stream);
    } catch {
      await jsm.streams.add({ name: opts.stream, subjects: [opts.subjects ?? subject] });
      process.stderr.write(`nats-publish: created stream ${opts.stream} (subjects ${opts.subjects ?? subject})\n`);
    }
  }
  const js = nc.jetstream();
  let ack;
  let n = 0;
  let duplicates = 0;
  let last = 0; // the highest sequence acknowledged (a duplicate's ack gives the earlier message's)
  for (const { line, id } of lines) {
    let h;
    if (id !== undefined) {
      h = headers();
      h.set("Nats-Msg-Id", id);
    }
    try {
      ack = await js.publish(subject, line, h === undefined ? undefined : { headers: h });
    } catch (e) {
      const why = e.code === "503" ? "no stream takes this subject (create one with --stream NAME)" : e.message;
      fail(1, `message ${n + 1} to ${subject} not acknowledged: ${why}; ${n} of ${lines.length} published`);
    }
    n++;
    if (ack.duplicate) duplicates++;
    last = Math.max(last, ack.seq);
  }
  const dup = duplicates === 0 ? "" : `, ${duplicates} of them duplicates the stream already held (same Nats-Msg-Id)`;
  process.stdout.write(
    `published ${n} messages to ${subject}${ack === undefined ? "" : ` (stream ${ack.stream}, last sequence ${last}${dup})`}\n`,
  );
} finally {
  await nc.close();
}
