/** Records a landing of (a piece of) a file (`straggler.source_files`), in the landing's transaction. */
import type { Queryable } from "../../pool.js";
import type { SourceFileFacts } from "./markSourceFile.js";

/** How far the file has landed, and what this landing counted. */
export interface FileLanding {
  /** Bytes and lines of the file consumed so far (not only by this landing). */
  landedBytes: number;
  landedLines: number;
  /** This landing's counts, added to the recorded ones. */
  rows: number;
  accepted: number;
  quarantined: number;
}

const RECORD_FILE_LANDING_SQL = `INSERT INTO straggler.source_files AS f (pipeline, name, state, size_bytes, mtime, sha256, config_hash, landed_bytes, landed_lines, rows, accepted, quarantined, landed_at)
     VALUES ($1, $2, 'landed', $3, $4, $5, $6, $7, $8, $9, $10, $11, now())
     ON CONFLICT (pipeline, name) DO UPDATE SET
       state = 'landed', reason = NULL, size_bytes = EXCLUDED.size_bytes, mtime = EXCLUDED.mtime,
       sha256 = coalesce(EXCLUDED.sha256, f.sha256), config_hash = EXCLUDED.config_hash,
       landed_bytes = EXCLUDED.landed_bytes, landed_lines = EXCLUDED.landed_lines,
       rows = f.rows + EXCLUDED.rows, accepted = f.accepted + EXCLUDED.accepted, quarantined = f.quarantined + EXCLUDED.quarantined,
       landed_at = now(), last_seen = now(), state_since = CASE WHEN f.state = 'landed' THEN f.state_since ELSE now() END`;

/**
 * Upserts the file's record as `landed`: counts added, landed bytes and lines set.
 * @throws the database's error
 */
export async function recordFileLanding(client: Queryable, file: SourceFileFacts, landing: FileLanding): Promise<void> {
  await client.query(RECORD_FILE_LANDING_SQL, [
    file.pipeline,
    file.name,
    file.sizeBytes,
    file.mtime,
    file.sha256,
    file.configHash,
    landing.landedBytes,
    landing.landedLines,
    landing.rows,
    landing.accepted,
    landing.quarantined,
  ]);
}
