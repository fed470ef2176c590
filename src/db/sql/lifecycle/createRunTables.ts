/**
 * A correction run's scratch tables, private to its session and emptied at
 * its commit: `corr_targets`, the windows the run examines, and
 * `corr_changes`, those whose recompute differs from the stored value.
 */
import type { PoolClient } from "../../pool.js";

const CREATE_TARGETS_SQL = `CREATE TEMP TABLE IF NOT EXISTS corr_targets (group_key text, window_start timestamptz, window_end timestamptz,
  PRIMARY KEY (group_key, window_start, window_end)) ON COMMIT DELETE ROWS`;
const CREATE_CHANGES_SQL = `CREATE TEMP TABLE IF NOT EXISTS corr_changes (group_key text, window_start timestamptz, window_end timestamptz,
  rev_before int, n_before bigint, s_before numeric, lo_before numeric, hi_before numeric,
  n bigint, s numeric, lo numeric, hi numeric) ON COMMIT DELETE ROWS`;

/** Creates both tables in the run's transaction `client` where this session has none yet. */
export async function createRunTables(client: PoolClient): Promise<void> {
  await client.query(CREATE_TARGETS_SQL);
  await client.query(CREATE_CHANGES_SQL);
}
