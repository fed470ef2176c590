/**
 * The change feed's table (docs/change-feed.md, migration 0032): one row per
 * change of a published window, written by the statement that made the change
 * in the same transaction (the stream's MERGE, the correction's upsert, the
 * session steps, the cutover, a hold and its release), never by a trigger.
 * drizzle-kit reads it with the other schema files (drizzle.config.ts).
 */
import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, numeric, primaryKey, text } from "drizzle-orm/pg-core";
import { straggler, tstz } from "./schema.js";

/**
 * A change of one window (`change` new, updated, corrected, retracted, cutover) or a marker of the
 * pipeline's publication (`held`, `released`: no window). `id` is the feed's position: per pipeline,
 * id order is commit order because every writer holds the pipeline's results lock until it commits.
 * Before and after are the window's aggregates (`*_before` null for a new window, `*_after` null
 * for a retracted one); the cause is the micro-batch, the correction run, the version cut over to, or the hold.
 */
export const windowChanges = straggler.table(
  "window_changes",
  {
    id: bigserial("id", { mode: "number" }).notNull(),
    pipeline: text("pipeline").notNull(),
    change: text("change").notNull(),
    groupKey: text("group_key"),
    windowStart: tstz("window_start"),
    windowEnd: tstz("window_end"),
    revision: integer("revision"),
    countBefore: bigint("count_before", { mode: "number" }),
    sumBefore: numeric("sum_before"),
    minBefore: numeric("min_before"),
    maxBefore: numeric("max_before"),
    countAfter: bigint("count_after", { mode: "number" }),
    sumAfter: numeric("sum_after"),
    minAfter: numeric("min_after"),
    maxAfter: numeric("max_after"),
    batchId: bigint("batch_id", { mode: "number" }),
    runId: bigint("run_id", { mode: "number" }),
    version: integer("version"),
    holdId: bigint("hold_id", { mode: "number" }),
    at: tstz("at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.id] }),
    // The pipeline's last hold marker, read by every read of the feed (src/db/sql/feed/readChanges.ts).
    index("window_changes_hold_markers")
      .on(t.pipeline, t.id)
      .where(sql`change IN ('held', 'released')`),
    check(
      "window_changes_change_check",
      sql`${t.change} IN ('new', 'updated', 'corrected', 'retracted', 'cutover', 'held', 'released')`,
    ),
  ],
);

/**
 * How far the feed of a pipeline was pruned (src/db/sql/feed/pruneChanges.ts): every change with
 * an id up to `through_id` is gone; a read after a smaller id is refused (it would skip changes).
 */
export const windowChangesPruned = straggler.table("window_changes_pruned", {
  pipeline: text("pipeline").primaryKey(),
  throughId: bigint("through_id", { mode: "number" }).notNull(),
  prunedAt: tstz("pruned_at").notNull().defaultNow(),
});
