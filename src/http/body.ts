/**
 * Request bodies of `POST /pipelines/{p}/events`, read as a stream and
 * spooled to a temporary file before anything lands: the landing holds its
 * pipeline's append lock only while it reads a local file, never while a
 * client is slow to send, and a large body never sits in memory whole.
 *
 * - `Content-Encoding`: identity, gzip (x-gzip), deflate or br; anything
 *   else is 415. The limit counts the decoded bytes (a gzip bomb is 413).
 * - The SHA-256 of the decoded bytes, exactly as sent (a BOM and whitespace
 *   included), identifies the body for `Idempotency-Key`.
 * - NDJSON (any body whose first non-blank byte is not `[`) is landed from
 *   the spooled bytes as they are, one record per line.
 * - A JSON array is split into its elements by a streaming tokenizer
 *   (stream-json, not recursive: any depth is safe to read), one element per
 *   line of JSON text; numbers keep their exact text. The tokenizer runs
 *   synchronously on each 64 kB chunk, so the event loop gets a turn
 *   between chunks. An element nested
 *   deeper than `MAX_JSON_DEPTH` or a body that is not valid JSON is 400.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough, Transform, type TransformCallback } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { StringDecoder } from "node:string_decoder";
import { getManyValues, none } from "stream-chain/defs.js";
import { jsonParser as jsonTokenizer } from "stream-json/core/parser.js";
import type { RawRecord } from "../core/admission.js";
import { MAX_JSON_DEPTH, readRecords, type ReadOptions } from "../ingest/readers.js";
import { HttpError } from "./errors.js";

export interface SpooledBody {
  /** SHA-256 (hex) of the decoded body bytes. */
  sha256: string;
  /** Decoded size, bytes. */
  bytes: number;
  /** `array` for a JSON array body, else `ndjson`. */
  format: "array" | "ndjson";
  /** The body's records, one per line (NDJSON) or element (array), read from the spool file. */
  records(): AsyncGenerator<RawRecord>;
  /** Removes the spool files. */
  remove(): Promise<void>;
}

const TOO_LARGE = () => new HttpError(413, "payload_too_large", "request body is larger than the limit");

function decoderFor(encoding: string | undefined): Transform | undefined {
  const e = (encoding ?? "identity").trim().toLowerCase();
  if (e === "identity" || e === "") return undefined;
  if (e === "gzip" || e === "x-gzip") return createGunzip();
  if (e === "deflate") return createInflate();
  if (e === "br") return createBrotliDecompress();
  throw new HttpError(415, "invalid_request", `unsupported content encoding ${JSON.stringify(encoding!.slice(0, 100))}`);
}

/** Passes bytes through, hashing and counting them; fails with 413 past `limit`; notes the first byte that is not blank (nor a BOM). */
class Meter extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;
  first: number | undefined;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return done(TOO_LARGE());
    this.hash.update(chunk);
    if (this.first === undefined) {
      for (const b of chunk) {
        // space, tab, LF, CR, and the bytes of a UTF-8 BOM
        if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0xef || b === 0xbb || b === 0xbf) continue;
        this.first = b;
        break;
      }
    }
    done(null, chunk);
  }
}

type Token = { name: string; value?: string | null | boolean };

/**
 * Tokens of one JSON array → its elements as JSON text, one per line.
 * Strings are re-escaped by `JSON.stringify` (JSON text cannot hold a raw
 * line break), numbers keep their text. Not recursive: any depth is safe.
 */
class ElementsAsLines {
  private depth = 0; // the array itself is depth 1
  private line = "";
  private afterKey = false;
  private readonly needsComma: boolean[] = [];

  /** The complete elements among `tokens`, each followed by a line feed. */
  take(tokens: Token[]): string {
    let out = "";
    for (const t of tokens) {
      switch (t.name) {
        case "startObject":
        case "startArray":
          if (this.depth === 0) {
            if (t.name !== "startArray") throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON");
            this.depth = 1;
            break;
          }
          if (this.depth > MAX_JSON_DEPTH) throw new HttpError(400, "invalid_request", `body: invalid JSON array: an element is nested deeper than ${MAX_JSON_DEPTH} levels`);
          this.separate();
          this.line += t.name === "startObject" ? "{" : "[";
          this.needsComma[++this.depth] = false;
          break;
        case "endObject":
        case "endArray":
          if (this.depth === 1) {
            this.depth = 0;
            break;
          }
          this.line += t.name === "endObject" ? "}" : "]";
          if (--this.depth === 1) out += this.endElement();
          break;
        case "keyValue":
          if (this.needsComma[this.depth]) this.line += ",";
          this.needsComma[this.depth] = true;
          this.line += JSON.stringify(t.value) + ":";
          this.afterKey = true;
          break;
        case "stringValue":
        case "numberValue":
        case "nullValue":
        case "trueValue":
        case "falseValue":
          this.separate();
          this.line += t.name === "stringValue" ? JSON.stringify(t.value) : String(t.value);
          if (this.depth === 1) out += this.endElement();
          break;
      }
    }
    return out;
  }

  private separate(): void {
    if (this.depth < 2) return;
    if (this.afterKey) this.afterKey = false;
    else if (this.needsComma[this.depth]) this.line += ",";
    this.needsComma[this.depth] = true;
  }

  private endElement(): string {
    const text = this.line + "\n";
    this.line = "";
    return text;
  }
}

/**
 * A Transform from the bytes of a JSON array to its elements, one per line.
 * stream-json's tokenizer is called synchronously per chunk (its stream
 * form costs a promise per token: three times slower on a 15 MB body).
 */
function arrayToLines(): Transform {
  const decoder = new StringDecoder("utf8");
  const tokenize = jsonTokenizer({ streamValues: false }) as unknown as (text: string | symbol) => unknown;
  const splitter = new ElementsAsLines();
  let first = true;
  const run = (text: string | symbol): string => {
    const r = tokenize(text);
    return r === none ? "" : splitter.take(getManyValues(r as never) as Token[]);
  };
  const wrap = (fn: () => string, done: TransformCallback) => {
    try {
      done(null, fn());
    } catch (e) {
      done(e instanceof HttpError ? e : new HttpError(400, "invalid_request", `body: invalid JSON array: ${(e as Error).message.slice(0, 200)}`));
    }
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      wrap(() => {
        let text = decoder.write(chunk);
        if (first && text !== "") {
          first = false;
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        }
        return text === "" ? "" : run(text);
      }, done);
    },
    flush(done) {
      wrap(() => {
        const rest = decoder.end();
        return (rest === "" ? "" : run(rest)) + run(none);
      }, done);
    },
  });
}

async function* fileRecords(file: string, opts: ReadOptions): AsyncGenerator<RawRecord> {
  const stream = createReadStream(file);
  try {
    yield* readRecords(stream, "jsonl", opts);
  } finally {
    stream.destroy();
  }
}

/**
 * Reads `req`'s body to a temporary file (and, for a JSON array, splits it
 * into one element per line in a second file).
 * @param limitBytes largest accepted decoded body, bytes
 * @param readOptions how the pipeline reads records (longest record, …)
 * @throws HttpError 415 (unsupported Content-Encoding), 413 (over the limit), 400 (empty body, invalid JSON array, too deep); nothing is left on disk then
 */
export async function spoolBody(req: IncomingMessage, limitBytes: number, readOptions: ReadOptions = {}): Promise<SpooledBody> {
  const declared = Number(req.headers["content-length"]);
  const decoder = decoderFor(req.headers["content-encoding"]);
  if (decoder === undefined && Number.isFinite(declared) && declared > limitBytes) throw TOO_LARGE();
  const dir = await mkdtemp(path.join(tmpdir(), "straggler-body-"));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const raw = path.join(dir, "body");
    const meter = new Meter(limitBytes);
    // The request itself stays out of the pipeline: a pipeline destroys its source on error,
    // which would reset the connection before the 413 or 400 answer reaches the client.
    const source = new PassThrough();
    req.pipe(source);
    req.on("error", (e) => source.destroy(e));
    req.on("close", () => {
      if (!req.complete) source.destroy(new Error("the client closed the connection before the body was complete"));
    });
    try {
      if (decoder) await pipe(source, decoder, meter, createWriteStream(raw, { mode: 0o600 }));
      else await pipe(source, meter, createWriteStream(raw, { mode: 0o600 }));
    } catch (e) {
      req.unpipe(source);
      if (e instanceof HttpError) throw e;
      // zlib's errors are the client's: a body that does not decode.
      if (typeof (e as { errno?: unknown }).errno === "number" && decoder) throw new HttpError(400, "invalid_request", `body: cannot decode ${req.headers["content-encoding"]}: ${(e as Error).message}`, { cause: e });
      throw e;
    }
    if (meter.first === undefined) throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON, got an empty body");
    const format = meter.first === 0x5b ? "array" : "ndjson";
    let file = raw;
    if (format === "array") {
      file = path.join(dir, "elements");
      try {
        await pipe(createReadStream(raw), arrayToLines(), createWriteStream(file, { mode: 0o600 }));
      } catch (e) {
        if (e instanceof HttpError) throw e;
        throw new HttpError(400, "invalid_request", `body: invalid JSON array: ${(e as Error).message.slice(0, 200)}`, { cause: e });
      }
      await rm(raw);
    }
    return { sha256: meter.hash.digest("hex"), bytes: meter.bytes, format, records: () => fileRecords(file, readOptions), remove };
  } catch (e) {
    req.resume(); // read the rest (and drop it), so the error answer reaches the client
    await remove();
    throw e;
  }
}
