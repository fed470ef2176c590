/**
 * Records a replayed file as landed under its own name with 0 rows (its rows
 * count under the `replay:…` sources), so that the landing folder does not
 * land it again (src/replay/replay.ts).
 */
import type { Queryable } from "../../pool.js";

const RECORD_REPLAYED_FILE_SQL = `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined)
         VALUES ($1, $2, $3, 0, 0, 0) ON CONFLICT DO NOTHING`;

/**
 * @param file the file's base name, as the landing folder names its sources
 * @param replayTag `replay:<dataset id>`, kept in the `sha256` column
 * @throws the database's error
 */
export async function recordReplayedFile(
  client: Queryable,
  pipeline: string,
  file: string,
  replayTag: string,
): Promise<void> {
  await client.query(RECORD_REPLAYED_FILE_SQL, [pipeline, file, replayTag]);
}
