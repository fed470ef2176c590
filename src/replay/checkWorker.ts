/**
 * The replay's check worker (started by src/replay/checkOrder.ts): checks the second half of a file, from
 * `from` (a line's first byte) to its end, with the header the first half read, and posts what it found.
 */
import { createReadStream } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { readOptionsFor, readRecords } from "../ingest/readers.js";
import { checkRecords, type CheckWorkerData, type CheckWorkerMessage } from "./checkOrder.js";

if (parentPort !== null) {
  const port = parentPort;
  const { pipeline, file, arrivalField, spanMs, from, header } = workerData as CheckWorkerData;
  const records = readRecords(createReadStream(file, { start: from }), pipeline.source.format, {
    ...readOptionsFor(pipeline),
    ...(header === undefined ? {} : { header }),
    startOffset: from,
  });
  checkRecords(records, pipeline, arrivalField, spanMs).then(
    (checked) => port.postMessage({ kind: "done", checked } satisfies CheckWorkerMessage),
    (e: unknown) =>
      port.postMessage({
        kind: "error",
        message: e instanceof Error ? e.message : String(e),
      } satisfies CheckWorkerMessage),
  );
}
