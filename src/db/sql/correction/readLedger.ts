/** Reads a pipeline's ledger counts for reconcile (DESIGN §7: accepted + quarantined = landed). */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** Bronze rows of a pipeline by status (archived ones included), rows its landed sources account for, and rows the stream has not read yet. */
export interface Ledger {
  landed: number;
  accepted: number;
  quarantined: number;
  /** Sum of `landed_sources.rows`. */
  landedBySource: number;
  /** Bronze rows after `snapshot`. */
  backlog: number;
}

const READ_LEDGER = "read_ledger";
// Rows of archived partitions (straggler.archived_rows, src/retention/archive.ts) count as landed: the ledger survives archival.
const READ_LEDGER_SQL = `SELECT (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1)
         + (SELECT coalesce(sum(rows), 0)::int FROM straggler.archived_rows WHERE pipeline = $1) AS landed,
       (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted')
         + (SELECT coalesce(sum(rows), 0)::int FROM straggler.archived_rows WHERE pipeline = $1 AND status = 'accepted') AS accepted,
       (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'quarantined')
         + (SELECT coalesce(sum(rows), 0)::int FROM straggler.archived_rows WHERE pipeline = $1 AND status = 'quarantined') AS quarantined,
       (SELECT coalesce(sum(rows), 0)::int FROM straggler.landed_sources WHERE pipeline = $1) AS by_source,
       (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2) AS backlog`;

/** The ledger of `pipeline`, the backlog counted after bronze `seq` `snapshot`. */
export async function readLedger(client: Queryable, pipeline: string, snapshot: number): Promise<Ledger> {
  const l = (await client.query(prepared(READ_LEDGER, READ_LEDGER_SQL, [pipeline, snapshot]))).rows[0];
  return {
    landed: l.landed,
    accepted: l.accepted,
    quarantined: l.quarantined,
    landedBySource: l.by_source,
    backlog: l.backlog,
  };
}
