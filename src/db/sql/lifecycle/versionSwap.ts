/**
 * The swap of a cutover (src/lifecycle/cutover.ts), inside its transaction.
 * A stored (not live) version keeps its classification as its difference from
 * bronze's (`straggler.event_classifications`, drizzle/0037): the rows whose
 * classification differs are marked `differs`; a row of its checkpoint range
 * it does not hold is classified as bronze classifies it. So the swap writes
 * only the rows that really change (D, the target's marked rows); the windows
 * are not copied at all: `straggler.window_results_table` holds every
 * version's under its number and the live one is a pointer (drizzle/0051),
 * which `swapStates` moves:
 *
 *   1. stash: the live version's checkpoint, windows awaiting correction,
 *      supersessions and lateness histogram are stored under its number
 *      (O(windows awaiting correction + histogram rows));
 *      of its classification only bronze's rows in D (what the swap is about
 *      to overwrite), marked — the rest is bronze's, as for any stored version;
 *   2. rebase: every other stored version is kept relative to bronze as it
 *      will be — its rows in D marked again against the target's, and the rows
 *      in D it did not hold (classified as the live version, which now
 *      differs) added from bronze, marked (O(|D|) per stored version);
 *   3. restore: bronze's classification columns are rewritten from D only
 *      (O(|D|), through the partial index on `differs`); the target's rows are
 *      then unmarked (equal to bronze); its lateness histogram replaces the
 *      live one (O(histogram rows)). The target keeps the rows it was
 *      built with (bronze's, unmarked): deleting them would cost the ledger.
 *
 * Bronze's raw columns are never written. Supersessions (`admission.dedupe:
 * latest`) are still copied whole (O(superseded rows)).
 */
import { bronzeRaw } from "../fragments/bronzeRaw.js";
import type { Queryable } from "../../pool.js";
import { moveRestoredRows } from "../observe/ledgerCounts.js";
import { restoreVersionHistogram, stashLiveHistogram } from "../lateness/histogramVersions.js";

const LATE_COLUMNS =
  "group_key, window_start, window_end, dropped_rows, max_seq, first_batch_id, last_batch_id, registered_at";
/** The classification of a row, as bronze and a stored version hold it; a row differs when any of these does. */
const CLASSIFICATION = (a: string) =>
  ["status", "reason", "detail", "event_time", "group_key", "value"].map((c) => `${a}.${c}`).join(", ");
/** The tables of a stored version other than its classification and its windows, replaced whole by a stash. */
const STORED_TABLES = ["version_checkpoints", "version_late_windows", "superseded_versions"];

/** The target's marked rows (D) joined with bronze's: $1 pipeline, $2 target. */
const D_JOIN = `straggler.event_classifications t JOIN straggler.bronze_events b ON b.pipeline = $1 AND b.seq = t.seq
 WHERE t.pipeline = $1 AND t.version = $2 AND t.differs`;

/** Stores bronze's classification of the rows the swap to `target` rewrites under `version` (upsert, marked). */
const STASH_CLASSIFICATION_SQL = `INSERT INTO straggler.event_classifications AS e (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT $1, $3, b.seq, b.event_id, b.event_time, b.group_key, b.value, b.status, b.reason, b.detail, true FROM ${D_JOIN}
ON CONFLICT (pipeline, version, seq) DO UPDATE SET event_id = EXCLUDED.event_id, event_time = EXCLUDED.event_time, group_key = EXCLUDED.group_key,
  value = EXCLUDED.value, status = EXCLUDED.status, reason = EXCLUDED.reason, detail = EXCLUDED.detail, differs = true`;

/**
 * Stores everything of the live version `version` of `pipeline` under that number (replacing what was stored of it before),
 * its classification as its difference from what bronze will hold once `target` is restored. Its windows stay where they
 * are (keyed by its number already).
 */
export async function stashLive(client: Queryable, pipeline: string, version: number, target: number): Promise<void> {
  const p = [pipeline, version];
  for (const t of STORED_TABLES)
    await client.query(`DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2`, p);
  await client.query(
    `INSERT INTO straggler.version_checkpoints (pipeline, version, batch_id, last_offset, max_event_time, watermark, inputs)
     SELECT pipeline, $2, batch_id, last_offset, max_event_time, watermark, inputs FROM straggler.checkpoints WHERE pipeline = $1`,
    p,
  );
  await client.query(
    `INSERT INTO straggler.version_late_windows (pipeline, version, ${LATE_COLUMNS}) SELECT pipeline, $2, ${LATE_COLUMNS} FROM straggler.late_windows WHERE pipeline = $1`,
    p,
  );
  await client.query(STASH_CLASSIFICATION_SQL, [pipeline, target, version]);
  await client.query(
    "INSERT INTO straggler.superseded_versions (pipeline, version, seq, event_id, superseded_by) SELECT pipeline, $2, seq, event_id, superseded_by FROM straggler.superseded_events WHERE pipeline = $1",
    p,
  );
  await stashLiveHistogram(client, pipeline, version);
}

/*
 * $1 pipeline, $2 target, $3 a stored version, $4 its checkpoint's seq. The stored version lacks a row of D in its
 * checkpoint range only where it classified it as bronze does now (the live version): added, marked (it differs
 * from the target's, which D holds because it differs from bronze's). One version per statement: every read is
 * an index probe (the marked rows through the partial index, the stored version's by its primary key).
 */
const REBASE_ADD_SQL = `INSERT INTO straggler.event_classifications (pipeline, version, seq, event_id, event_time, group_key, value, status, reason, detail, differs)
SELECT $1, $3, b.seq, b.event_id, b.event_time, b.group_key, b.value, b.status, b.reason, b.detail, true
  FROM ${D_JOIN} AND t.seq <= $4
ON CONFLICT (pipeline, version, seq) DO NOTHING`;
/* The stored version $3's rows in D marked against the target's (what bronze will hold); written only where the mark changes. */
const REBASE_MARK_SQL = `UPDATE straggler.event_classifications w
   SET differs = (${CLASSIFICATION("w")}) IS DISTINCT FROM (${CLASSIFICATION("t")})
  FROM straggler.event_classifications t
 WHERE t.pipeline = $1 AND t.version = $2 AND t.differs
   AND w.pipeline = $1 AND w.version = $3 AND w.seq = t.seq
   AND w.differs IS DISTINCT FROM ((${CLASSIFICATION("w")}) IS DISTINCT FROM (${CLASSIFICATION("t")}))`;
/* $1 pipeline, $2 target, $3 the live version (or 0): the other versions, with their checkpoint's seq (null: a rebuild still running). */
const OTHERS_SQL = `SELECT v.version, k.last_offset FROM straggler.policy_versions v
  LEFT JOIN straggler.version_checkpoints k ON k.pipeline = v.pipeline AND k.version = v.version
 WHERE v.pipeline = $1 AND v.version NOT IN ($2, $3)`;

/**
 * Keeps every stored version of `pipeline` but `target` and `live` relative to bronze once `target` is restored
 * (step 2 above). Runs before `restoreVersion`: the rows it adds are read from bronze as it is.
 */
export async function rebaseStored(
  client: Queryable,
  pipeline: string,
  target: number,
  live: number | null,
): Promise<void> {
  const { rows } = await client.query(OTHERS_SQL, [pipeline, target, live ?? 0]);
  for (const r of rows) {
    if (r.last_offset !== null) await client.query(REBASE_ADD_SQL, [pipeline, target, r.version, r.last_offset]);
    await client.query(REBASE_MARK_SQL, [pipeline, target, r.version]);
  }
}

const RESTORE_CLASSIFICATION_SQL = `UPDATE straggler.bronze_events b
   SET status = t.status, reason = t.reason, detail = t.detail, event_time = t.event_time, group_key = t.group_key, value = t.value,
       -- A row kept without its raw text gets it before the columns that give it back change.
       raw = CASE WHEN b.raw IS NULL AND (b.event_time, b.group_key, b.value) IS DISTINCT FROM (t.event_time, t.group_key, t.value)
                  THEN ${bronzeRaw("b")} ELSE b.raw END
  FROM straggler.event_classifications t
 WHERE t.pipeline = $1 AND t.version = $2 AND t.differs AND b.pipeline = $1 AND b.seq = t.seq
   AND (${CLASSIFICATION("b")}) IS DISTINCT FROM (${CLASSIFICATION("t")})`;

/**
 * Puts the stored version `version` of `pipeline` in the live places (checkpoint with batch id
 * `batchId`, windows awaiting correction, bronze's classification columns where they differ, supersessions, lateness histogram),
 * records `policyVersion` as the policy of every landing, and removes its stored copy (but its classification
 * rows, unmarked: equal to bronze's). Its windows go live when `swapStates` makes it the live version.
 * @returns the bronze rows whose classification changed
 */
export async function restoreVersion(
  client: Queryable,
  pipeline: string,
  version: number,
  policyVersion: string,
  batchId: number,
): Promise<{ reclassifiedRows: number }> {
  const p = [pipeline, version];
  await client.query(
    `INSERT INTO straggler.checkpoints AS c (pipeline, batch_id, last_offset, max_event_time, watermark, inputs, updated_at)
     SELECT pipeline, $3, last_offset, max_event_time, watermark, inputs, now() FROM straggler.version_checkpoints WHERE pipeline = $1 AND version = $2
     ON CONFLICT (pipeline) DO UPDATE SET batch_id = EXCLUDED.batch_id, last_offset = EXCLUDED.last_offset, max_event_time = EXCLUDED.max_event_time,
       watermark = EXCLUDED.watermark, inputs = EXCLUDED.inputs, updated_at = now()`,
    [pipeline, version, batchId],
  );
  await client.query("DELETE FROM straggler.late_windows WHERE pipeline = $1", [pipeline]);
  await client.query(
    `INSERT INTO straggler.late_windows (pipeline, ${LATE_COLUMNS}) SELECT pipeline, ${LATE_COLUMNS} FROM straggler.version_late_windows WHERE pipeline = $1 AND version = $2`,
    p,
  );
  await moveRestoredRows(client, pipeline, version);
  const changed = await client.query(RESTORE_CLASSIFICATION_SQL, p);
  await client.query(
    "UPDATE straggler.event_classifications SET differs = false WHERE pipeline = $1 AND version = $2 AND differs",
    p,
  );
  // One row per landing (the catch-up classified every landed row under the target's policy).
  await client.query(
    "UPDATE straggler.landed_sources SET policy_version = $2 WHERE pipeline = $1 AND first_seq IS NOT NULL AND policy_version IS DISTINCT FROM $2",
    [pipeline, policyVersion],
  );
  await client.query("DELETE FROM straggler.superseded_events WHERE pipeline = $1", [pipeline]);
  await client.query(
    "INSERT INTO straggler.superseded_events (seq, pipeline, event_id, superseded_by) SELECT seq, pipeline, event_id, superseded_by FROM straggler.superseded_versions WHERE pipeline = $1 AND version = $2",
    p,
  );
  for (const t of STORED_TABLES)
    await client.query(`DELETE FROM straggler.${t} WHERE pipeline = $1 AND version = $2`, p);
  await restoreVersionHistogram(client, pipeline, version);
  return { reclassifiedRows: changed.rowCount ?? 0 };
}

/** @returns the windows of `version` of `pipeline` (an index-only count: O(windows)) */
export async function countVersionWindows(client: Queryable, pipeline: string, version: number): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM straggler.window_results_table WHERE pipeline = $1 AND version = $2",
    [pipeline, version],
  );
  return rows[0]?.n ?? 0;
}

/** Makes `version` the live version of `pipeline` and the live one `retired`. */
export async function swapStates(client: Queryable, pipeline: string, version: number): Promise<void> {
  await client.query("UPDATE straggler.policy_versions SET state = 'retired' WHERE pipeline = $1 AND state = 'live'", [
    pipeline,
  ]);
  await client.query(
    "UPDATE straggler.policy_versions SET state = 'live', live_since = now() WHERE pipeline = $1 AND version = $2",
    [pipeline, version],
  );
}

/** The highest batch id `pipeline` has used (its progress rows), or -1. */
export async function readMaxBatchId(client: Queryable, pipeline: string): Promise<number> {
  return Number(
    (
      await client.query("SELECT coalesce(max(batch_id), -1) AS b FROM straggler.batch_progress WHERE pipeline = $1", [
        pipeline,
      ])
    ).rows[0].b,
  );
}
