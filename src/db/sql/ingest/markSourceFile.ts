/** Records a file's state (`straggler.source_files`), its counts and landed bytes unchanged. */
import type { Queryable } from "../../pool.js";
import type { SourceFileState } from "./readSourceFiles.js";

/** A file's facts as recorded; `mtime` is an ISO 8601 instant (whole ms). */
export interface SourceFileFacts {
  pipeline: string;
  name: string;
  sizeBytes: number;
  mtime: string;
  /** SHA-256 (hex) of the bytes; null keeps the one recorded. */
  sha256: string | null;
  /** `sourceConfigHash` of the pipeline (src/ingest/sourceFiles.ts). */
  configHash: string;
}

const MARK_SOURCE_FILE_SQL = `INSERT INTO straggler.source_files AS f (pipeline, name, state, reason, size_bytes, mtime, sha256, config_hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (pipeline, name) DO UPDATE SET
       state = EXCLUDED.state, reason = EXCLUDED.reason, size_bytes = EXCLUDED.size_bytes, mtime = EXCLUDED.mtime,
       sha256 = coalesce(EXCLUDED.sha256, f.sha256), config_hash = EXCLUDED.config_hash, last_seen = now(),
       state_since = CASE WHEN f.state = EXCLUDED.state THEN f.state_since ELSE now() END`;

/**
 * Upserts the file's record in `state`; `state_since` moves only when the state changes, `last_seen` always.
 * @throws the database's error
 */
export async function markSourceFile(
  client: Queryable,
  file: SourceFileFacts,
  state: SourceFileState,
  reason: string | null,
): Promise<void> {
  await client.query(MARK_SOURCE_FILE_SQL, [
    file.pipeline,
    file.name,
    state,
    reason,
    file.sizeBytes,
    file.mtime,
    file.sha256,
    file.configHash,
  ]);
}
