/**
 * Classifying a stored row again (src/lifecycle/rebuild.ts): its raw text is
 * read as the readers read it at landing (src/ingest/readers.ts
 * `storedRecord`; a CSV line by its source's recorded header) and classified
 * by the same admission code (src/core/admission.ts `classifyRecord`), with
 * the row's original ingestion time: the stored `ingestion_time` is the
 * landing time of a record that carried none (DESIGN §8: stored, never
 * recomputed); a record that carries its own ingestion time under the policy
 * is compared with the landing's clock (`landed_at`) as at landing. The event
 * id is the stored one (a raw column). Dedupe needs the other rows and runs
 * in SQL afterwards (src/db/sql/stream/classifications.ts).
 */
import { windowShapeOf } from "../core/pipelineSpec.js";
import type { PipelineConfig } from "../config/pipelines.js";
import { classifyRecord, QuarantineReason } from "../core/admission.js";
import { formatInstant } from "../core/instants.js";
import type { Classification, RawBronzeRow } from "../db/sql/stream/classifications.js";
import type { CsvColumns } from "../ingest/csvRecords.js";
import { SourceRefused } from "../ingest/errors.js";
import { headerColumns, readOptionsFor, storedRecord } from "../ingest/readers.js";

/** Why a stored CSV source cannot be read again: its header was not recorded, or no longer names the columns the policy reads. */
export class SourceUnreadableError extends Error {
  override name = "SourceUnreadableError";
}

/** The header columns of each source, parsed once per rebuild. */
export type HeaderCache = Map<string, CsvColumns | null>;

/**
 * Classifies `rows` under `pipeline`'s policy.
 * @param headers each CSV source's recorded header line (sources without one are absent)
 * @param cache parsed headers, filled as sources are met
 * @throws SourceUnreadableError when a CSV source's header no longer names a column the policy reads
 */
export function classifyStored(
  pipeline: PipelineConfig,
  rows: RawBronzeRow[],
  headers: Map<string, string>,
  cache: HeaderCache,
): Classification[] {
  const opts = readOptionsFor(pipeline);
  const ingestionField = pipeline.fields.ingestionTime;
  const window = windowShapeOf(pipeline);
  return rows.map((row) => {
    // A line cut at landing (longer than the record limit) has lost its end: it stays what it was.
    if (row.oldReason === QuarantineReason.MALFORMED && row.oldDetail?.startsWith("longer than ")) {
      return {
        seq: row.seq,
        eventId: row.eventId,
        eventTime: null,
        groupKey: "",
        value: null,
        status: "quarantined",
        reason: QuarantineReason.MALFORMED,
        detail: row.oldDetail,
      };
    }
    let columns: CsvColumns | null = null;
    if (pipeline.source.format === "csv") {
      if (!cache.has(row.source)) {
        const header = headers.get(row.source);
        try {
          cache.set(row.source, header === undefined ? null : headerColumns(header, opts));
        } catch (e) {
          if (e instanceof SourceRefused) throw new SourceUnreadableError(`source ${row.source}: ${e.message}`);
          throw e;
        }
      }
      columns = cache.get(row.source)!;
    }
    const rec = storedRecord(row.raw, row.sourceLine, pipeline.source.format, opts.csv, columns);
    const own = ingestionField !== undefined && rec.fields !== null && (rec.fields[ingestionField] ?? "") !== "";
    const landingMs = own ? row.landedMs : Number(row.ingestionUs / 1000n);
    const c = classifyRecord(rec, pipeline, row.source, landingMs, window);
    return {
      seq: row.seq,
      eventId: row.eventId,
      eventTime: c.eventTimeUs === null ? null : formatInstant(c.eventTimeUs),
      groupKey: c.groupKey,
      value: c.value,
      status: c.status,
      reason: c.reason,
      detail: c.detail,
    };
  });
}
