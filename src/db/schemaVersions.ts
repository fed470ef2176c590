/**
 * The tables of results versions beside the live one (migration 0018;
 * src/lifecycle/rebuild.ts, cutover.ts; README "Incidents: hold, rebuild, cut
 * over"), declared as the migration leaves them; views and the trigger that
 * keeps bronze's raw columns unchanged live in the migration. Every table is
 * keyed by (pipeline, version).
 */
import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, jsonb, numeric, primaryKey, text } from "drizzle-orm/pg-core";
import { straggler, tstz } from "./schema.js";

/** Each CSV source's header line as read at landing: a rebuild reads its raw lines again by it. */
export const sourceHeaders = straggler.table(
  "source_headers",
  {
    pipeline: text("pipeline").notNull(),
    source: text("source").notNull(),
    header: text("header").notNull(),
    /** One letter per column (e, t, i, k, v: src/ingest/rawLayout.ts) when some of the source's rows were written without their raw text. */
    rawLayout: text("raw_layout"),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.source] })],
);

/** One rebuild per candidate version: its ledger bound, progress (committed per page), reconcile and changed rows. */
export const rebuilds = straggler.table(
  "rebuilds",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    status: text("status").notNull(),
    ledgerSeq: bigint("ledger_seq", { mode: "number" }).notNull(),
    doneSeq: bigint("done_seq", { mode: "number" }).notNull().default(0),
    rowsDone: bigint("rows_done", { mode: "number" }).notNull().default(0),
    reconcileOk: boolean("reconcile_ok"),
    reconcile: jsonb("reconcile"),
    changedRows: jsonb("changed_rows"),
    startedAt: tstz("started_at").notNull().defaultNow(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
    finishedAt: tstz("finished_at"),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.version] }),
    check("rebuilds_status_check", sql`${t.status} IN ('running', 'complete')`),
  ],
);

/**
 * Rows' classification under a version that is not live (bronze holds the live one's), kept as the
 * version's difference from bronze (drizzle/0037_classification_deltas.sql; src/lifecycle/cutover.ts):
 * every row of the version's checkpoint range whose classification differs from bronze's is here with
 * `differs` true; a row not here is classified as bronze classifies it. A rebuilt candidate holds every
 * row (its rebuild and dedupe read them), most with `differs` false.
 */
export const eventClassifications = straggler.table(
  "event_classifications",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    eventId: text("event_id").notNull(),
    eventTime: tstz("event_time"),
    groupKey: text("group_key").notNull(),
    value: numeric("value"),
    status: text("status").notNull(),
    reason: text("reason"),
    detail: text("detail"),
    /** True when the classification differs from bronze's (status, reason, detail, event_time, group_key, value). */
    differs: boolean("differs").notNull().default(true),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.version, t.seq] }),
    index("event_classifications_event_id")
      .on(t.pipeline, t.version, t.eventId)
      .where(sql`status = 'accepted'`),
    // A cutover's read of the rows it rewrites: O(differing rows) at any ledger size.
    index("event_classifications_differs")
      .on(t.pipeline, t.version, t.seq)
      .where(sql`differs`),
  ],
);

/** A version's supersessions (`admission.dedupe: latest`), as `superseded_events` holds the live one's. */
export const supersededVersions = straggler.table(
  "superseded_versions",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    eventId: text("event_id").notNull(),
    supersededBy: bigint("superseded_by", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.version, t.seq] })],
);

/** A non-live version's checkpoint. */
export const versionCheckpoints = straggler.table(
  "version_checkpoints",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    batchId: bigint("batch_id", { mode: "number" }).notNull(),
    lastOffset: bigint("last_offset", { mode: "number" }).notNull(),
    maxEventTime: tstz("max_event_time"),
    watermark: tstz("watermark"),
    inputs: jsonb("inputs"),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.version] })],
);

/** A non-live version's windows awaiting correction. */
export const versionLateWindows = straggler.table(
  "version_late_windows",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    droppedRows: bigint("dropped_rows", { mode: "number" }).notNull(),
    maxSeq: bigint("max_seq", { mode: "number" }).notNull(),
    firstBatchId: bigint("first_batch_id", { mode: "number" }).notNull(),
    lastBatchId: bigint("last_batch_id", { mode: "number" }).notNull(),
    registeredAt: tstz("registered_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.version, t.groupKey, t.windowStart, t.windowEnd] })],
);

/** A rebuild's windows added, removed or changed against the live version (view `rebuild_diff`). */
export const rebuildWindowChanges = straggler.table(
  "rebuild_window_changes",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    againstVersion: integer("against_version"),
    change: text("change").notNull(),
    groupKey: text("group_key").notNull(),
    windowStart: tstz("window_start").notNull(),
    windowEnd: tstz("window_end").notNull(),
    beforeCount: bigint("before_count", { mode: "number" }),
    beforeSum: numeric("before_sum"),
    beforeMin: numeric("before_min"),
    beforeMax: numeric("before_max"),
    afterCount: bigint("after_count", { mode: "number" }),
    afterSum: numeric("after_sum"),
    afterMin: numeric("after_min"),
    afterMax: numeric("after_max"),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.version, t.groupKey, t.windowStart, t.windowEnd] }),
    check("rebuild_window_changes_change_check", sql`${t.change} IN ('added', 'removed', 'changed')`),
  ],
);

/** A rebuild's rows whose classification changed, counted by (before, after) label (view `rebuild_reclassified`). */
export const rebuildReasonChanges = straggler.table(
  "rebuild_reason_changes",
  {
    pipeline: text("pipeline").notNull(),
    version: integer("version").notNull(),
    beforeReason: text("before_reason").notNull(),
    afterReason: text("after_reason").notNull(),
    rows: bigint("rows", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.version, t.beforeReason, t.afterReason] })],
);
