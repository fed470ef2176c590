/**
 * A cutover or rollback in the change feed (src/lifecycle/cutover.ts): every
 * window the switch changes, as a `cutover` change — before the previous live
 * version's row (stashed under its number just before), after the new live
 * one's; after null for a window the new version does not have, before null
 * for one the old did not. Windows alike in both (aggregates and revision) are
 * no change. Written in the cutover's transaction, after the swap.
 */
import type { Queryable } from "../../pool.js";
import { CHANGE_COLUMNS, changeRow, stored } from "../fragments/changeRows.js";
import { storedAggregates } from "../fragments/windowAggregates.js";
import { liveVersion } from "../fragments/liveVersion.js";

const CUTOVER_SQL = `INSERT INTO straggler.window_changes (${CHANGE_COLUMNS}, version)
SELECT ${changeRow({
  pipeline: "$1",
  change: "'cutover'",
  key: "coalesce(n.group_key, o.group_key)",
  start: "coalesce(n.window_start, o.window_start)",
  end: "coalesce(n.window_end, o.window_end)",
  revision: "coalesce(n.revision, o.revision)",
  before: stored("o"),
  after: stored("n"),
})}, $3
  FROM (SELECT * FROM straggler.window_results_table WHERE pipeline = $1 AND version = ${liveVersion()}) n
  FULL JOIN (SELECT * FROM straggler.window_results_table WHERE pipeline = $1 AND version = $2) o
    ON o.group_key = n.group_key AND o.window_start = n.window_start AND o.window_end = n.window_end
 WHERE (${storedAggregates("n")}, n.revision) IS DISTINCT FROM (${storedAggregates("o")}, o.revision)
 ORDER BY coalesce(n.group_key, o.group_key), coalesce(n.window_start, o.window_start), coalesce(n.window_end, o.window_end)`;

/**
 * Writes the changes of `pipeline`'s switch from version `previous` (stashed; null: none was live) to the live `version`.
 * @returns the changes written
 * @throws the database's error
 */
export async function writeCutoverChanges(
  client: Queryable,
  pipeline: string,
  previous: number | null,
  version: number,
): Promise<number> {
  return (await client.query(CUTOVER_SQL, [pipeline, previous, version])).rowCount ?? 0;
}
