/**
 * The NATS JetStream source (README "NATS JetStream source"): a nats-server of
 * its own (a free port, a temporary store) holds a stream of the workload's
 * events, published beforehand; a service (its log consumer and stream loop)
 * then drains it. Measured per round: the publish rate (each message
 * acknowledged by the stream), the rate at which the consumer lands the
 * messages in bronze (10,000-message pulls, each landing committed with its
 * offsets before it is acknowledged), and end to end (the service started →
 * every message's results committed by the stream). The reference, in the same
 * round, is landing the same events from a file. Each round checks that every
 * event is in bronze exactly once.
 *
 * Without nats-server (`NATS_SERVER`, default Debian's /usr/sbin/nats-server)
 * the section is skipped with a message.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { connect, type NatsConnection } from "nats";
import { pipelineSchema } from "../src/config/pipelineSchema.js";
import type { PipelineConfig } from "../src/config/pipelines.js";
import type { Pool } from "../src/db/pool.js";
import { landFile } from "../src/ingest/landFile.js";
import { startService } from "../src/service.js";
import { NATS_SERVER_BIN, startNatsServer } from "../test/helpers/natsServer.js";
import { benchPipeline, fmt, fmtStat, log, now, say, stat, tmp, writeEvents, type BenchContext } from "./common.js";
import { events, toJsonLine } from "./workload.js";

/** Messages per pull (the trigger's maxRowsPerBatch): what the consumer holds at most. */
const PULL = 10_000;
/** Publishes in flight at once. */
const IN_FLIGHT = 1_000;

/** The bench pipeline consuming stream `stream` of the server at `url`. */
function natsPipeline(name: string, url: string, stream: string): PipelineConfig {
  return pipelineSchema.parse({
    name,
    source: { format: "jsonl", nats: { servers: url, stream } },
    fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    trigger: { interval: "1 second", maxRowsPerBatch: PULL },
    admission: { maxFutureSkew: null },
  });
}

/** Publishes the workload's `count` events to `subject`, IN_FLIGHT at a time. @returns events/s acknowledged by the stream */
async function publishEvents(nc: NatsConnection, subject: string, count: number): Promise<number> {
  const js = nc.jetstream();
  const enc = new TextEncoder();
  const t0 = now();
  let pending: Promise<unknown>[] = [];
  for (const e of events(count)) {
    pending.push(js.publish(subject, enc.encode(toJsonLine(e).trimEnd())));
    if (pending.length >= IN_FLIGHT) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  return count / ((now() - t0) / 1000);
}

/** Polls `probe` every 20 ms until it is true. */
async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`nats bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** @throws Error unless bronze holds each of the `count` events of `pipeline` exactly once, all accepted */
async function checkOnce(pool: Pool, pipeline: string, count: number): Promise<void> {
  const { rows } = await pool.query(
    "SELECT count(*)::int AS rows, count(DISTINCT event_id) FILTER (WHERE status = 'accepted')::int AS ids FROM straggler.bronze_events WHERE pipeline = $1",
    [pipeline],
  );
  if (rows[0].rows !== count || rows[0].ids !== count)
    throw new Error(
      `${pipeline}: ${count} events published, ${rows[0].rows} rows in bronze, ${rows[0].ids} distinct accepted events`,
    );
}

interface NatsRound {
  publish: number;
  landed: number;
  endToEnd: number;
  file: number;
}

/** One round: stream BENCH_<r> published, drained by a service; then the same events landed from `file`. */
async function natsRound(
  ctx: BenchContext,
  nc: NatsConnection,
  url: string,
  r: number,
  count: number,
  file: string,
): Promise<NatsRound> {
  const stream = `BENCH_${r}`,
    subject = `bench${r}.events`,
    name = `nats-${r}`;
  await (await nc.jetstreamManager()).streams.add({ name: stream, subjects: [subject] });
  const publish = await publishEvents(nc, subject, count);

  const pipeline = natsPipeline(name, url, stream);
  const db = { pool: ctx.pool, url: ctx.url, kind: "external" as const, close: async () => undefined };
  const t0 = now();
  const service = await startService(
    { ...ctx.env, PORT: 0, STRAGGLER_API_TOKEN: "bench-token-0123456789" },
    db,
    [pipeline],
    log,
  );
  let landedS: number, doneS: number;
  try {
    // Landed: the stream's position in the database (every message up to it landed) reached the last sequence.
    await until(async () => {
      const { rows } = await ctx.pool.query(
        "SELECT last_offset::int AS at FROM straggler.log_offsets WHERE pipeline = $1 AND partition = '*'",
        [name],
      );
      return (rows[0]?.at ?? 0) >= count;
    }, `${name} to land ${count} messages`);
    landedS = (now() - t0) / 1000;
    const {
      rows: [{ last }],
    } = await ctx.pool.query("SELECT max(seq)::bigint AS last FROM straggler.bronze_events WHERE pipeline = $1", [
      name,
    ]);
    await until(async () => {
      const { rows } = await ctx.pool.query(
        "SELECT last_offset >= $2::bigint AS done FROM straggler.checkpoints WHERE pipeline = $1",
        [name, last],
      );
      return rows[0]?.done === true;
    }, `${name} to stream its rows`);
    doneS = (now() - t0) / 1000;
  } finally {
    await service.stop();
  }
  await checkOnce(ctx.pool, name, count);

  const t1 = now();
  const landed = await landFile(ctx.pool, benchPipeline(`nats-file-${r}`), file, `nats-file-${r}.jsonl`);
  const fileRate = landed.landed / ((now() - t1) / 1000);
  return { publish, landed: count / landedS, endToEnd: count / doneS, file: fileRate };
}

/** 6. The NATS JetStream source: max(2,000, 200,000 × scale) events per round. Skipped without nats-server. */
export async function measureNats(ctx: BenchContext): Promise<void> {
  if (!existsSync(NATS_SERVER_BIN)) {
    say(
      `nats: ${NATS_SERVER_BIN} is missing (install the nats-server package, or set NATS_SERVER): the NATS JetStream figures are skipped`,
    );
    return;
  }
  const count = Math.max(2_000, Math.round(200_000 * ctx.scale));
  const file = path.join(tmp, "nats-events.jsonl");
  await writeEvents(file, count);
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  const rounds: NatsRound[] = [];
  try {
    for (let r = 0; r < ctx.rounds; r++) {
      rounds.push(await natsRound(ctx, nc, server.url, r, count, file));
      const x = rounds[r]!;
      say(
        `nats round ${r}: published ${fmt(x.publish)} ev/s, landed ${fmt(x.landed)} ev/s, end to end ${fmt(x.endToEnd)} ev/s; file landing ${fmt(x.file)} ev/s`,
      );
    }
  } finally {
    await nc.close();
    await server.dispose();
  }
  const landed = stat(rounds.map((x) => x.landed)),
    e2e = stat(rounds.map((x) => x.endToEnd));
  const fromFile = stat(rounds.map((x) => x.file)),
    pub = stat(rounds.map((x) => x.publish));
  ctx.row(
    `NATS JetStream → bronze: ${count.toLocaleString("en-US")} events published first (${fmtStat(pub, " ev/s")} acknowledged), then drained by the service's consumer in ${PULL.toLocaleString("en-US")}-message pulls; each event in bronze once`,
    fmtStat(landed, " ev/s"),
    `the same events from a file ${fmtStat(fromFile, " ev/s")}`,
    `${(landed.median / fromFile.median).toFixed(2)} × file`,
    "—",
  );
  ctx.row(
    "NATS JetStream end to end (service started → every message's results committed)",
    fmtStat(e2e, " ev/s"),
    `landed alone ${fmtStat(landed, " ev/s")}`,
    `${(e2e.median / landed.median).toFixed(2)} × landing`,
    "—",
  );
}
