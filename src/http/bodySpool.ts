/**
 * Where a request body's bytes go while it is read (src/http/body.ts): memory while they fit, past
 * that a file in a new temporary folder (`straggler-spool-body-…`, src/ingest/spoolFolders.ts), and
 * which failures of that file are the service's own (503) rather than the client's.
 */
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { spoolPrefix } from "../ingest/spoolFolders.js";
import { HttpError } from "./errors.js";

/**
 * The service's own fault while spooling a body (no space left, no temporary
 * folder, too many open files): a system call's error, never the client's.
 * 503, so the client sends the body again later, rather than a 400 that
 * would tell it the body is bad. Undefined for any other error.
 */
export function spoolFault(e: unknown): HttpError | undefined {
  const err = e as NodeJS.ErrnoException;
  if (typeof err?.syscall !== "string" || typeof err.code !== "string") return undefined;
  return new HttpError(
    503,
    "unavailable",
    `the service cannot hold the request body (${err.code} in its temporary folder); nothing landed, retry later`,
    { cause: e },
  );
}

/**
 * Where a body's bytes go: memory while they fit in `memoryMax` bytes; past
 * that, everything so far and the rest to the file `body` in a new
 * temporary folder (`dir`).
 */
export class Spool extends Writable {
  chunks: Buffer[] = [];
  dir: string | undefined;
  private held = 0;
  /** The write to the file under way, if any. */
  private writing: Promise<void> | undefined;
  private out: WriteStream | undefined;
  constructor(private readonly memoryMax: number) {
    super();
  }
  get file(): string | undefined {
    return this.dir === undefined ? undefined : path.join(this.dir, "body");
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    if (this.out === undefined && this.held + chunk.length <= this.memoryMax) {
      this.chunks.push(chunk);
      this.held += chunk.length;
      return done();
    }
    this.writing = this.spill(chunk);
    this.writing.then(() => done(), done);
  }
  /** Resolves once no write to the file is under way (after an error too). */
  async idle(): Promise<void> {
    await this.writing?.catch(() => undefined);
  }
  private async spill(chunk: Buffer): Promise<void> {
    if (this.out === undefined) {
      const dir = await mkdtemp(spoolPrefix("body"));
      if (this.destroyed) {
        // The read failed meanwhile (413, a dropped connection): its cleanup has run already.
        await rm(dir, { recursive: true, force: true });
        throw new Error("the body's read was abandoned");
      }
      this.dir = dir;
      this.out = createWriteStream(this.file!, { mode: 0o600 });
      this.out.on("error", () => undefined); // reported by the write that meets it
      const held = this.chunks;
      this.chunks = [];
      for (const c of held) await this.append(c);
    }
    await this.append(chunk);
  }
  private append(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.out!.write(chunk, (e) => (e ? reject(e) : resolve())));
  }
  override _final(done: (e?: Error | null) => void): void {
    if (this.out === undefined) return done();
    this.out.end();
    finished(this.out).then(() => done(), done);
  }
  override _destroy(e: Error | null, done: (e?: Error | null) => void): void {
    this.out?.destroy();
    done(e);
  }
}
