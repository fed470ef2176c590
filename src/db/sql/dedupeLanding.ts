/** Quarantines as DUPLICATE the accepted rows of a landing whose event id was accepted before (admission's dedupe, DESIGN §10). */
import type { Queryable } from "../pool.js";
import { prepared } from "../prepared.js";

const DEDUPE_LANDING = "bronze_dedupe";

/**
 * Turns into DUPLICATE quarantine each accepted row of this landing (seq > $2,
 * pipeline $1) whose event id was accepted at a lower seq in this pipeline: in
 * bronze before, or earlier in this source (the statement sees the rows as
 * they were before it, so of n copies the first stays accepted). Params: $1
 * pipeline, $2 the table's highest seq before this landing. Its row count is
 * the number of duplicates.
 *
 * Written so the plan cannot depend on statistics. Bronze is usually not
 * analysed since the rows just landed, and a pipeline that is new since the
 * last ANALYZE is estimated at ~0 rows, so every index leading with
 * `pipeline` looks free — which once made the probe scan a whole pipeline per
 * row. Here `pipeline || ''` is a condition no index can use: the outer scan
 * can only be the primary-key range `seq > $2` (this landing, plus any
 * concurrent landing of another pipeline), and the probe only the event-id
 * index. The probe is a scalar subquery with LIMIT, which stays one index
 * probe per row (as EXISTS the planner may turn it into a join).
 */
export const DEDUPE_SQL = `
UPDATE straggler.bronze_events b
   SET status = 'quarantined', reason = 'DUPLICATE',
       detail = 'an accepted record with this event id is already in bronze'
 WHERE b.seq > $2 AND b.pipeline || '' = $1 AND b.status = 'accepted'
   AND (SELECT 1 FROM straggler.bronze_events o
         WHERE o.event_id = b.event_id AND o.pipeline || '' = $1 AND o.seq < b.seq AND o.status = 'accepted' LIMIT 1) IS NOT NULL`;

/**
 * Runs `DEDUPE_SQL` in the landing's transaction (under the append lock).
 * @param seqBefore the table's highest `seq` before the landing (`readBronzeMaxSeq`)
 * @returns the number of rows turned into DUPLICATE quarantine
 * @throws the database's error
 */
export async function dedupeLanding(client: Queryable, pipeline: string, seqBefore: number): Promise<number> {
  return (await client.query(prepared(DEDUPE_LANDING, DEDUPE_SQL, [pipeline, seqBefore]))).rowCount ?? 0;
}
