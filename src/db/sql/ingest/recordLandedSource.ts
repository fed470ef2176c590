/** Records a source's landing (`straggler.landed_sources`), in the landing's transaction, before COMMIT is sent. */
import type { Queryable } from "../../pool.js";

/** What is recorded; seqs are bronze `seq`s (null when nothing was written). */
export interface LandedSourceRecord {
  pipeline: string;
  source: string;
  /** SHA-256 (hex) of the source's records, one per line. */
  sha256: string;
  rows: number;
  accepted: number;
  quarantined: number;
  firstSeq: number | null;
  lastSeq: number | null;
  /** SHA-256 (hex) of the HTTP request body, when the records came from one. */
  requestSha256: string | null;
  byReason: Record<string, number>;
  /** The policy version (hash) the rows were classified under: the landing's configured policy (`policyVersion`). */
  policyVersion: string;
}

const RECORD_LANDED_SOURCE_SQL = `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq, request_sha256, by_reason, policy_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`;

/**
 * Inserts the record unless the source is recorded already (primary key: pipeline, source).
 * @returns false when a record of the source was there already: nothing was written
 * @throws the database's error
 */
export async function recordLandedSource(client: Queryable, r: LandedSourceRecord): Promise<boolean> {
  const { rowCount } = await client.query(RECORD_LANDED_SOURCE_SQL, [
    r.pipeline,
    r.source,
    r.sha256,
    r.rows,
    r.accepted,
    r.quarantined,
    r.firstSeq,
    r.lastSeq,
    r.requestSha256,
    JSON.stringify(r.byReason),
    r.policyVersion,
  ]);
  return rowCount !== 0;
}
