/**
 * A rebuild's and a cutover's reads of a version beside the ledger (src/lifecycle/rebuild.ts,
 * cutover.ts): the version's row locked with its state, the bronze rows a rebuild has still to
 * classify, the candidate's classified rows counted against bronze, and fresh statistics of the
 * classification table as it fills.
 */
import type { Queryable } from "../../pool.js";

/** A version of a pipeline as `straggler.policy_versions` records it: its state, policy version (hash) and canonical policy text. */
export interface VersionRecord {
  state: "live" | "candidate" | "retired";
  policyVersion: string;
  policy: string;
}

/**
 * Locks version `version` of `pipeline` (`FOR UPDATE`, until the transaction ends) and reads it.
 * @returns undefined when the pipeline has no such version
 */
export async function lockVersion(
  client: Queryable,
  pipeline: string,
  version: number,
): Promise<VersionRecord | undefined> {
  const { rows } = await client.query(
    "SELECT state, policy_version, policy FROM straggler.policy_versions WHERE pipeline = $1 AND version = $2 FOR UPDATE",
    [pipeline, version],
  );
  const r = rows[0] as { state: VersionRecord["state"]; policy_version: string; policy: string } | undefined;
  return r === undefined ? undefined : { state: r.state, policyVersion: r.policy_version, policy: r.policy };
}

/** How many bronze rows of `pipeline` have `after < seq <= upTo`. */
export async function countBronzeBetween(
  client: Queryable,
  pipeline: string,
  after: number,
  upTo: number,
): Promise<number> {
  const { rows } = await client.query(
    "SELECT count(*) AS n FROM straggler.bronze_events WHERE pipeline = $1 AND seq > $2 AND seq <= $3",
    [pipeline, after, upTo],
  );
  return Number(rows[0].n);
}

/** A candidate's ledger up to a seq: bronze rows landed, and the candidate's rows classified accepted and quarantined. */
export interface CandidateLedger {
  landed: number;
  accepted: number;
  quarantined: number;
}

/** The ledger of version `version` of `pipeline` over bronze's rows with `seq <= ledgerSeq`. */
export async function readCandidateLedger(
  client: Queryable,
  pipeline: string,
  version: number,
  ledgerSeq: number,
): Promise<CandidateLedger> {
  const { rows } = await client.query(
    `SELECT (SELECT count(*) FROM straggler.bronze_events WHERE pipeline = $1 AND seq <= $3) AS landed,
            count(*) FILTER (WHERE status = 'accepted') AS accepted, count(*) FILTER (WHERE status <> 'accepted') AS quarantined
       FROM straggler.event_classifications WHERE pipeline = $1 AND version = $2 AND seq <= $3`,
    [pipeline, version, ledgerSeq],
  );
  return {
    landed: Number(rows[0].landed),
    accepted: Number(rows[0].accepted),
    quarantined: Number(rows[0].quarantined),
  };
}

/** Fresh planner statistics of `straggler.event_classifications` (ANALYZE), while a rebuild fills it. */
export async function analyzeClassifications(client: Queryable): Promise<void> {
  await client.query("ANALYZE straggler.event_classifications");
}
