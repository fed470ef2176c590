/**
 * The last exchange of a one-source landing whose dedupe changed no row (none
 * ran, or the probe proved none could: src/ingest/copyToBronze.ts), one round
 * trip in place of four: reads the `seq` range the landing wrote, records the
 * source (`straggler.landed_sources`) with its counts as classified, records
 * its CSV header (with the layout its rows written without raw text are read
 * back by), queues the NOTIFY that wakes the stream, and reads the
 * transaction's id (what `readTxidStatus` asks about when the answer to
 * COMMIT is lost). Several statements in one simple-protocol query, the
 * parameters written in (`inlineParams`).
 */
import type { QueryResult } from "pg";
import { inlineParams } from "../../inlineParams.js";
import type { Queryable } from "../../pool.js";
import { BRONZE_CHANNEL } from "./bronzeChannel.js";
import type { LandedSourceRecord } from "./recordLandedSource.js";
import { checkLayout, SOURCE_HEADER_SQL } from "./sourceHeaders.js";

/**
 * $1 pipeline, $2 bronze's seq high water before the landing (src/db/sql/ingest/bronzeSeqHighWater.ts), $3 source, $4 SHA-256 of its records, $5 rows,
 * $6 accepted, $7 quarantined, $8 request body SHA-256, $9 quarantined per reason (JSON), $10 policy version,
 * $11 the channel. The range is the (pipeline, seq) index's (pipeline, seq) > ($1, $2): its two ends, no row read between.
 * One row: the range and whether the source was recorded (false: recorded already, nothing written), and the txid.
 */
const RECORD_LANDING_SQL = `
WITH g AS (SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2),
rec AS (
  INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined, first_seq, last_seq, request_sha256, by_reason, policy_version)
  SELECT $1, $3, $4, $5, $6, $7, g.first_seq, g.last_seq, $8, $9::jsonb, $10 FROM g
  ON CONFLICT DO NOTHING
  RETURNING 1)
SELECT g.first_seq, g.last_seq, EXISTS (SELECT 1 FROM rec) AS recorded, n.txid
  FROM (SELECT pg_notify($11, $1), txid_current()::text AS txid) n, g`;

/** What the exchange found: the landing's `seq` range, whether its source was recorded, the txid. */
export interface RecordedLanding {
  firstSeq: number | null;
  lastSeq: number | null;
  /** False when the source had a record already (written by a writer that did not take the append lock): roll back. */
  recorded: boolean;
  txid: string;
}

/**
 * Records a landing (`r`'s `firstSeq`/`lastSeq` are read here, not taken from `r`) in one round trip.
 * @param seqBefore bronze's seq high water read under the append lock before the landing's COPY (bronzeSeqHighWater.ts)
 * @param header the source's CSV header line and the layout its rows without raw text were written by, or undefined
 * @throws Error when the source's recorded header has another layout than the one its rows were written by (`checkLayout`)
 * @throws the database's error
 */
export async function recordLanding(
  client: Queryable,
  r: Omit<LandedSourceRecord, "firstSeq" | "lastSeq">,
  seqBefore: number,
  header: { text: string; rawLayout: string | null } | undefined,
): Promise<RecordedLanding> {
  const statements = [
    ...(header === undefined
      ? []
      : [inlineParams(SOURCE_HEADER_SQL, [r.pipeline, r.source, header.text, header.rawLayout])]),
    inlineParams(RECORD_LANDING_SQL, [
      r.pipeline,
      seqBefore,
      r.source,
      r.sha256,
      r.rows,
      r.accepted,
      r.quarantined,
      r.requestSha256,
      JSON.stringify(r.byReason),
      r.policyVersion,
      BRONZE_CHANNEL,
    ]),
  ];
  const out = (await client.query(statements.join(";\n"))) as unknown as QueryResult | QueryResult[];
  const results = Array.isArray(out) ? out : [out];
  const row = results[results.length - 1]!.rows[0];
  const recorded = row.recorded === true;
  if (recorded && header !== undefined)
    checkLayout(r.source, header.rawLayout, results[0]!.rows[0].raw_layout as string | null);
  return {
    firstSeq: row.first_seq as number | null,
    lastSeq: row.last_seq as number | null,
    recorded,
    txid: row.txid as string,
  };
}
