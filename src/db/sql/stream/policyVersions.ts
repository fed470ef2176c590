/**
 * Results versions and their policies (table `straggler.policy_versions`,
 * migration 0014; src/guards/policy.ts decides with them).
 */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

/** The largest results version number: `policy_versions.version` is a PostgreSQL integer. */
export const MAX_RESULTS_VERSION = 2_147_483_647;

/** One results version of a pipeline. `policy` is the canonical JSON text; instants ISO 8601 UTC. */
export interface PolicyVersionRow {
  version: number;
  state: "live" | "candidate" | "retired";
  policyVersion: string;
  policy: string;
  createdAt: string;
  liveSince: string | null;
}

const READ_LIVE_SQL = `SELECT version, state, policy_version, policy, created_at, live_since
  FROM straggler.policy_versions WHERE pipeline = $1 AND state = 'live'`;

/** A row of `straggler.policy_versions` (columns version, state, policy_version, policy, created_at, live_since) as `PolicyVersionRow`. */
export function toPolicyVersionRow(r: Record<string, unknown>): PolicyVersionRow {
  return {
    version: r.version as number,
    state: r.state as PolicyVersionRow["state"],
    policyVersion: r.policy_version as string,
    policy: r.policy as string,
    createdAt: r.created_at as string,
    liveSince: r.live_since as string | null,
  };
}

/** @returns the live version of `pipeline`, or undefined before its policy was first recorded */
export async function readLivePolicy(client: Queryable, pipeline: string): Promise<PolicyVersionRow | undefined> {
  const r = (await client.query(prepared("read_live_policy", READ_LIVE_SQL, [pipeline]))).rows[0];
  return r && toPolicyVersionRow(r);
}

// Windows written while no version was live are version 0's (straggler.results_version, drizzle/0051): they become the new version's.
const RECORD_LIVE_SQL = `WITH v AS (
  INSERT INTO straggler.policy_versions (pipeline, version, state, policy_version, policy, live_since)
  SELECT $1, coalesce(max(version), 0) + 1, 'live', $2, $3, now() FROM straggler.policy_versions WHERE pipeline = $1
  RETURNING version),
relabel AS (UPDATE straggler.window_results_table r SET version = (SELECT version FROM v) WHERE r.pipeline = $1 AND r.version = 0)
SELECT version FROM v`;

/**
 * Records `policy` as the live version of `pipeline` (the next version number); the pipeline's version-0
 * windows (written while none was live) take its number.
 * Call under the pipeline's results lock, when it has no live version.
 * @returns the new version number
 * @throws unique_violation (23505) when a live version exists already
 */
export async function recordLivePolicy(
  client: Queryable,
  pipeline: string,
  policyVersion: string,
  policy: string,
): Promise<number> {
  return (await client.query(RECORD_LIVE_SQL, [pipeline, policyVersion, policy])).rows[0].version;
}

/**
 * Rewrites the policy text of `pipeline`'s live version in place (its settings
 * are unchanged; only settings at their defaults were added or dropped).
 */
export async function restampLivePolicy(
  client: Queryable,
  pipeline: string,
  policyVersion: string,
  policy: string,
): Promise<void> {
  await client.query(
    "UPDATE straggler.policy_versions SET policy_version = $2, policy = $3 WHERE pipeline = $1 AND state = 'live'",
    [pipeline, policyVersion, policy],
  );
}
