/** Reads a source's landing record (`straggler.landed_sources`): what landing it once answered, and the request body it came from. */
import type { Queryable } from "../../pool.js";

/** One landing as recorded; seqs are bronze `seq`s. */
export interface LandedSourceRow {
  rows: number;
  accepted: number;
  quarantined: number;
  /** Lowest and highest bronze `seq` the landing wrote; null when it wrote no row. */
  first_seq: number | null;
  last_seq: number | null;
  /** Quarantined rows per reason; null on records written before reasons were kept. */
  by_reason: Record<string, number> | null;
  /** SHA-256 (hex) of the HTTP request body; null for files, replay spans and records written before hashes were kept. */
  request_sha256: string | null;
}

const READ_LANDED_SOURCE_SQL =
  "SELECT rows, accepted, quarantined, first_seq, last_seq, by_reason, request_sha256 FROM straggler.landed_sources WHERE pipeline = $1 AND source = $2";

/**
 * @returns the record of `source`'s landing in `pipeline`, or undefined when it has not landed
 * @throws the database's error when it cannot be reached
 */
export async function readLandedSource(
  client: Queryable,
  pipeline: string,
  source: string,
): Promise<LandedSourceRow | undefined> {
  return (await client.query<LandedSourceRow>(READ_LANDED_SOURCE_SQL, [pipeline, source])).rows[0];
}
