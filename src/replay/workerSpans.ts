/**
 * The replay's spans read and classified on a worker thread (src/replay/spanWorker.ts), for one file
 * already in arrival order: started before the replay checks the file's order
 * (src/replay/rowSource.ts), so that the first spans are classified while the check reads, and the
 * landing loop (src/replay/spans.ts) then only lands and streams. Each span is checked against the
 * check pass's count of its records: a file that changed between the two readings fails the replay.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { LineTally } from "../ingest/classifyLines.js";
import type { CreditMessage, SpanPiece, SpanWorkerData, WireTally, WorkerMessage } from "./spanWorker.js";
import type { CheckedSpan } from "./arrivalSpans.js";
import { fileChanged, spanIdentity, type SpanNaming, type SpanSource } from "./spanSource.js";
import { startWorker } from "./threads.js";

/** Characters of classified COPY lines the worker may hold ready (about 30,000 records of the peers workload). */
const BUDGET_CHARS = 4 * 2 ** 20;

/** The worker, started; `spans` once the check pass has counted the file's spans, or `close` to stop it. */
export interface SpanWorker {
  /** The spans the worker classifies, checked against `checked` (the check pass's spans, in order). */
  spans(checked: readonly CheckedSpan[]): SpanSource;
  /** Stops the worker; never throws. */
  close(): Promise<void>;
}

function tallyOf(w: WireTally): LineTally {
  const { sha256, ...rest } = w;
  return { ...rest, hash: { digest: () => sha256 } };
}

/**
 * Starts the worker on `file` (read from its first byte).
 * @param arrivalField the field holding each record's arrival time
 */
export function startSpanWorker(
  pipeline: PipelineConfig,
  file: string,
  arrivalField: string,
  naming: SpanNaming,
): SpanWorker {
  const data: SpanWorkerData = { pipeline, file, arrivalField, naming, budgetChars: BUDGET_CHARS };
  const worker = startWorker("spanWorker", data);
  const queue: (WorkerMessage | { kind: "failed"; error: Error })[] = [];
  let waiting: (() => void) | undefined;
  let closed = false;
  const push = (m: (typeof queue)[number]) => {
    queue.push(m);
    waiting?.();
    waiting = undefined;
  };
  worker.on("message", (m: WorkerMessage) => push(m));
  worker.on("error", (error) => push({ kind: "failed", error }));
  worker.on("exit", (code) => {
    if (!closed) push({ kind: "failed", error: new Error(`the replay's span worker stopped (exit code ${code})`) });
  });
  /** The next message, its characters given back to the worker. */
  const take = async (): Promise<SpanPiece | undefined> => {
    while (queue.length === 0) await new Promise<void>((r) => (waiting = r));
    const m = queue.shift()!;
    if (m.kind === "failed") throw m.error;
    if (m.kind === "error") throw new Error(m.message);
    if (m.kind === "end") return undefined;
    worker.postMessage({ kind: "credit", chars: m.chars } satisfies CreditMessage);
    return m;
  };
  const close = async () => {
    if (closed) return;
    closed = true;
    await worker.terminate().catch(() => undefined);
  };
  return {
    close,
    spans(checked) {
      let index = 0;
      const changed = (what: string) => fileChanged(file, what);
      return {
        async next() {
          const first = await take();
          if (first === undefined) {
            if (index !== checked.length) throw changed(`${checked.length} spans checked, ${index} read`);
            return undefined;
          }
          const want = checked[index];
          if (want === undefined || first.start !== want.start)
            throw changed(
              `a span read at ${first.start === null ? "no arrival time" : new Date(first.start).toISOString()} was not checked`,
            );
          index++;
          const { source, landingTimeMs } = spanIdentity(first.start, naming);
          let rows = first.lines.length;
          const counted = (last: SpanPiece) => {
            if (rows !== want.rows) throw changed(`the span of ${source} holds ${rows} records, ${want.rows} checked`);
            return tallyOf(last.tally!);
          };
          if (first.last) {
            return {
              source,
              landingTimeMs,
              classified: { lines: first.lines, rest: null, tally: counted(first) },
              rowsDone: first.rowsDone,
            };
          }
          // A span of several pieces: the tally arrives with the last; it is filled in before the COPY reads past it.
          const tally: LineTally = {
            landed: 0,
            accepted: 0,
            byReason: {},
            hash: { digest: () => "" },
            rawLayout: null,
            acceptedIds: null,
            repeatedId: false,
            quarantinedIds: null,
            summary: null,
          };
          async function* rest(): AsyncGenerator<string> {
            for (;;) {
              const piece = await take();
              if (piece === undefined || piece.start !== first!.start)
                throw changed(`the span of ${source} ended early`);
              rows += piece.lines.length;
              if (piece.last) Object.assign(tally, counted(piece));
              yield* piece.lines;
              if (piece.last) return;
            }
          }
          return {
            source,
            landingTimeMs,
            classified: { lines: first.lines, rest: rest(), tally },
            rowsDone: first.rowsDone,
          };
        },
        close,
      };
    },
  };
}
