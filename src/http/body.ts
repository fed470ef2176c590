/**
 * Request bodies of `POST /pipelines/{p}/events`, read whole before anything
 * lands: the landing holds its pipeline's append lock only while it reads
 * bytes that are already here, never while a client is slow to send.
 *
 * - A body of at most `MEMORY_BODY_MAX_BYTES` decoded bytes (256 KiB, the
 *   size that lands by group commit) is held in memory; a larger one is
 *   spooled to a temporary file as soon as it passes that size, so a large
 *   body never sits in memory whole. Nothing is lost either way on a crash:
 *   the answer (201) is sent after the landing's COMMIT, and a body that was
 *   not answered is sent again by its client.
 * - `Content-Encoding`: identity, gzip (x-gzip), deflate or br; anything
 *   else is 415. Bodies are UTF-8: one starting with a UTF-16 or UTF-32
 *   byte order mark is 415 with a message saying so. The limit counts the decoded bytes (a gzip bomb is 413).
 * - The SHA-256 of the decoded bytes, exactly as sent (a BOM and whitespace
 *   included), identifies the body for `Idempotency-Key`.
 * - NDJSON (any body whose first non-blank byte is not `[`) is landed from
 *   its bytes as they are, one record per line.
 * - A JSON array is split into its elements by a streaming tokenizer
 *   (stream-json, not recursive: any depth is safe to read), one element per
 *   line of JSON text; numbers keep their exact text. The tokenizer runs
 *   synchronously on each 64 kB chunk, so the event loop gets a turn
 *   between chunks. An element nested
 *   deeper than `MAX_JSON_DEPTH` or a body that is not valid JSON is 400.
 *
 * A body is read to the same records whether it was held or spooled
 * (test/integration/requestBody.test.ts). Where the bytes go is bodySpool.ts; the split of a JSON
 * array into lines is jsonArrayLines.ts.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import { PassThrough, Readable, Transform, Writable, type TransformCallback } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import type { RawRecord } from "../core/admission.js";
import { readRecords, type ReadOptions } from "../ingest/readers.js";
import { notUtf8 } from "../ingest/sourceEncoding.js";
import { Spool, spoolFault } from "./bodySpool.js";
import { HttpError } from "./errors.js";
import { splitArray } from "./jsonArrayLines.js";

/** Largest body held in memory, decoded bytes (256 KiB); a larger one is spooled to a temporary file. */
const MEMORY_BODY_MAX_BYTES = 256 * 1024;

export interface RequestBody {
  /** SHA-256 (hex) of the decoded body bytes. */
  sha256: string;
  /** Decoded size, bytes. */
  bytes: number;
  /** `array` for a JSON array body, else `ndjson`. */
  format: "array" | "ndjson";
  /** `memory`: held whole (at most the memory limit); `file`: spooled to a temporary file. */
  held: "memory" | "file";
  /** The body's records, one per line (NDJSON) or element (array). */
  records(): AsyncGenerator<RawRecord>;
  /** Removes the spool files (nothing to do for a body held in memory). */
  remove(): Promise<void>;
}

const TOO_LARGE = () => new HttpError(413, "payload_too_large", "request body is larger than the limit");

function decoderFor(encoding: string | undefined): Transform | undefined {
  const e = (encoding ?? "identity").trim().toLowerCase();
  if (e === "identity" || e === "") return undefined;
  if (e === "gzip" || e === "x-gzip") return createGunzip();
  if (e === "deflate") return createInflate();
  if (e === "br") return createBrotliDecompress();
  throw new HttpError(
    415,
    "invalid_request",
    `unsupported content encoding ${JSON.stringify(encoding!.slice(0, 100))}`,
  );
}

/** Passes bytes through, hashing and counting them; fails with 413 past `limit`; notes the first byte that is not blank (nor a BOM). */
class Meter extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;
  first: number | undefined;
  /** The body's first 4 bytes (fewer when it is shorter). */
  head = Buffer.alloc(0);
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return done(TOO_LARGE());
    this.hash.update(chunk);
    if (this.head.length < 4) this.head = Buffer.concat([this.head, chunk.subarray(0, 4 - this.head.length)]);
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

async function* memoryRecords(chunks: Buffer[], opts: ReadOptions): AsyncGenerator<RawRecord> {
  yield* readRecords(
    (async function* () {
      yield* chunks;
    })(),
    "jsonl",
    opts,
  );
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
 * Reads `req`'s body: held in memory up to `memoryMaxBytes`, else spooled to
 * a temporary file (and, for a JSON array, split into one element per line,
 * in memory or in a second file likewise).
 * @param limitBytes largest accepted decoded body, bytes
 * @param readOptions how the pipeline reads records (longest record, …)
 * @param memoryMaxBytes largest body held in memory, decoded bytes (default `MEMORY_BODY_MAX_BYTES`)
 * @throws HttpError 503 (the spool's file system failed: no space, no temporary folder), 415 (unsupported Content-Encoding; a UTF-16 or UTF-32 byte order mark), 413 (over the limit), 400 (empty body, invalid JSON array, too deep); nothing is left on disk then
 */
export async function readBody(
  req: IncomingMessage,
  limitBytes: number,
  readOptions: ReadOptions = {},
  memoryMaxBytes = MEMORY_BODY_MAX_BYTES,
): Promise<RequestBody> {
  const declared = Number(req.headers["content-length"]);
  const decoder = decoderFor(req.headers["content-encoding"]);
  if (decoder === undefined && Number.isFinite(declared) && declared > limitBytes) throw TOO_LARGE();
  const spool = new Spool(memoryMaxBytes);
  const remove = async () => {
    if (spool.dir !== undefined) await rm(spool.dir, { recursive: true, force: true });
  };
  try {
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
      if (decoder) await pipe(source, decoder, meter, spool);
      else await pipe(source, meter, spool);
    } catch (e) {
      req.unpipe(source);
      if (e instanceof HttpError) throw e;
      const fault = spoolFault(e);
      if (fault !== undefined) throw fault;
      // zlib's errors are the client's: a body that does not decode.
      if (typeof (e as { errno?: unknown }).errno === "number" && decoder)
        throw new HttpError(
          400,
          "invalid_request",
          `body: cannot decode ${req.headers["content-encoding"]}: ${(e as Error).message}`,
          { cause: e },
        );
      throw e;
    }
    const encoding = notUtf8(meter.head);
    if (encoding !== undefined) throw new HttpError(415, "unsupported_media_type", `body: ${encoding}`);
    if (meter.first === undefined)
      throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON, got an empty body");
    const format = meter.first === 0x5b ? "array" : "ndjson";
    const found = { sha256: meter.hash.digest("hex"), bytes: meter.bytes, format, remove } as const;
    const raw = spool.file;
    if (raw === undefined) {
      let chunks = spool.chunks;
      if (format === "array") {
        const elements: Buffer[] = [];
        await splitArray(
          Readable.from(chunks),
          new Writable({ write: (c: Buffer, _e, done) => (elements.push(c), done()) }),
        );
        chunks = elements;
      }
      return { ...found, held: "memory", records: () => memoryRecords(chunks, readOptions) };
    }
    let file = raw;
    if (format === "array") {
      file = path.join(spool.dir!, "elements");
      await splitArray(createReadStream(raw), createWriteStream(file, { mode: 0o600 }));
      await rm(raw);
    }
    return { ...found, held: "file", records: () => fileRecords(file, readOptions) };
  } catch (e) {
    req.resume(); // read the rest (and drop it), so the error answer reaches the client
    spool.destroy();
    await spool.idle(); // a spool folder being made now is removed by the write that makes it
    await remove();
    throw e;
  }
}
