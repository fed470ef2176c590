/**
 * The rows of one bronze partition and pipeline as an archive file holds them (src/retention/archive.ts,
 * restore.ts): every column, the source by its name and the raw text whole (bronze holds the source's id
 * and may hold a row without its text), so an archive file stands on its own.
 */
import { bronzeRaw } from "../fragments/bronzeRaw.js";
import { ingestionTimeJoined, joinSourceOf } from "../fragments/ingestionTime.js";

/** Bronze's columns in an archive, in order (all of them, the source by its name, the raw text whole). */
export const ARCHIVE_COLUMNS = [
  "seq",
  "pipeline",
  "event_id",
  "raw",
  "event_time",
  "ingestion_time",
  "group_key",
  "value",
  "status",
  "reason",
  "detail",
  "source",
  "source_line",
  "landed_at",
  "input",
] as const;

/** The archive's columns bronze does not hold as they are (the source's record joined: `joinSourceOf`). */
const ARCHIVED_AS: Partial<Record<(typeof ARCHIVE_COLUMNS)[number], string>> = {
  raw: `${bronzeRaw("")} AS raw`,
  ingestion_time: `${ingestionTimeJoined("")} AS ingestion_time`,
  source: "its.source_name AS source",
  input: "coalesce(input, 'default') AS input",
};

/**
 * The COPY TO of an archive's rows, in seq order.
 * @param partition the partition's name, quoted as an identifier; @param pipeline the pipeline's name, quoted as a literal
 */
export function archiveCopySql(partition: string, pipeline: string): string {
  return `COPY (SELECT ${ARCHIVE_COLUMNS.map((c) => ARCHIVED_AS[c] ?? c).join(", ")} FROM straggler.${partition} ${joinSourceOf("")} WHERE pipeline = ${pipeline} ORDER BY seq) TO STDOUT`;
}
