/**
 * The `straggler` schema (DESIGN "Tables"): the ledger, bronze, with where its rows came from (sources,
 * files, log offsets), the amended events, bronze's archives, and the pipeline leases. The stream's
 * results are in schemaResults.ts, the records of the service's own work (runs, failures, alerts,
 * policies) in schemaRecords.ts, results versions in schemaVersions.ts, the change feed in
 * schemaFeed.ts. Each declares its tables as the migrations in `drizzle/` leave them (drizzle-kit reads
 * them all: drizzle.config.ts); views live in the migrations.
 * Instants are `timestamptz` (microseconds, PostgreSQL's full precision), values `numeric`, sequence numbers `bigint`.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  numeric,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  unique,
} from "drizzle-orm/pg-core";

export const straggler = pgSchema("straggler");

/** `timestamptz` without a declared precision: PostgreSQL's full precision, microseconds (as the migrations create it). */
export const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "string" });

/**
 * The raw ledger: every landed record, accepted or quarantined. Immutable.
 * Partitioned by RANGE (landed_at), one partition per UTC calendar month plus a DEFAULT
 * partition (drizzle/0023_partitioned_bronze.sql; drizzle cannot declare
 * partitioning): no primary key (a partitioned table's would have to hold the partition key), `seq` stays
 * unique through its one sequence (drizzle/0050_bronze_narrow_keys.sql). Partitions past the correction horizon
 * are archived and dropped (src/retention/).
 */
export const bronzeEvents = straggler.table(
  "bronze_events",
  {
    seq: bigserial("seq", { mode: "number" }).notNull(),
    pipeline: text("pipeline").notNull(),
    eventId: text("event_id").notNull(),
    /** The record's text as received; NULL when its columns reproduce it by its source's layout (read it through `straggler.bronze_raw`, drizzle/0039_bronze_raw_elided.sql). */
    raw: text("raw"),
    /** With `raw` NULL: the fields no column holds (the layout's x letters), in order, joined by commas; else NULL. */
    rawRest: text("raw_rest"),
    /** With `raw` NULL and a layout with an a letter: that field's instant (its text is `straggler.instant_text` of it); else NULL. */
    rawAt: tstz("raw_at"),
    eventTime: tstz("event_time"),
    /** NULL: the source's (`bronze_sources.ingestion_time`), the landing's time its rows took (drizzle/0053_bronze_ingestion_time_of_source.sql). */
    ingestionTime: tstz("ingestion_time"),
    groupKey: text("group_key").notNull(),
    value: numeric("value"),
    status: text("status").notNull(),
    reason: text("reason"),
    detail: text("detail"),
    /** The source the row came from (`straggler.bronze_sources`; the views show its name), drizzle/0039_bronze_raw_elided.sql. */
    sourceId: bigint("source_id", { mode: "number" }).notNull(),
    sourceLine: integer("source_line").notNull(),
    landedAt: tstz("landed_at").notNull().defaultNow(),
    /**
     * The input the row came from (docs/DESIGN.md "Several inputs"); NULL (the landing's) or `default` (a row written by
     * hand) when the source named none (drizzle/0042_bronze_default_input.sql).
     */
    input: text("input").default("default"),
  },
  (t) => [
    // One btree for every read by a pipeline's seq range (the landing's own rows, the micro-batch, backlog, ledger
    // counts, rebuild pages, holds) and every seq look-up (which names the pipeline). Not unique: a unique index of a
    // partitioned table must hold the partition key landed_at, 8 bytes an entry, and seq's only writer is the
    // sequence (a restore checks its archive's seqs first): drizzle/0050_bronze_narrow_keys.sql.
    index("bronze_events_pipeline_seq").on(t.pipeline, t.seq),
    // Event-time range reads (correction and reconcile over a range, sessions, lateness): a BRIN
    // index, a few bytes per 128 pages, since bronze is in landing order and event time follows
    // landing up to the lateness (drizzle/0029_lean_bronze_indexes.sql).
    index("bronze_events_event_time_brin").using("brin", t.eventTime),
    // Corrections read one key's accepted events of one window: (group_key, event_time), partial on accepted rows
    // (every reader asks for those). The pipeline and the value are read from the heap row, which the read visits
    // anyway for the value (drizzle/0038_bronze_pipeline_seq_key.sql: the covering form of 0022/0029 cost 104 B
    // per event for an index-only scan).
    index("bronze_events_key_event_time")
      .on(t.groupKey, t.eventTime)
      .where(sql`status = 'accepted'`),
    // Dedupe probe: is an accepted row with this event id at a lower seq in this pipeline? The index holds two
    // 4-byte keys of the id (every probe names both and the id: src/db/sql/fragments/eventIdKey.ts), so no
    // other index can serve the probe; pipeline, seq and the id itself are checked on the heap row (0029, 0050).
    index("bronze_events_accepted_event_key")
      .using("btree", sql`straggler.event_id_high(event_id)`, sql`straggler.event_id_low(event_id)`)
      .where(sql`status = 'accepted'`),
  ],
);

/** The names of the sources bronze rows came from, by id: one row per pipeline and source name (bronze_events.source_id). */
export const bronzeSources = straggler.table(
  "bronze_sources",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    pipeline: text("pipeline").notNull(),
    name: text("name").notNull(),
    /** The ingestion time its rows that store none have: its landing's, else the time it was recorded at (drizzle/0053); never changes. */
    ingestionTime: tstz("ingestion_time").notNull().defaultNow(),
  },
  (t) => [unique("bronze_sources_pipeline_name_key").on(t.pipeline, t.name)],
);

/** Which files / requests / replay batches have landed, so each lands exactly once. */
export const landedSources = straggler.table(
  "landed_sources",
  {
    pipeline: text("pipeline").notNull(),
    source: text("source").notNull(),
    sha256: text("sha256").notNull(),
    rows: integer("rows").notNull(),
    accepted: integer("accepted").notNull(),
    quarantined: integer("quarantined").notNull(),
    firstSeq: bigint("first_seq", { mode: "number" }),
    lastSeq: bigint("last_seq", { mode: "number" }),
    landedAt: tstz("landed_at").notNull().defaultNow(),
    /** HTTP landings: SHA-256 (hex) of the request body after Content-Encoding is removed (Idempotency-Key check). */
    requestSha256: text("request_sha256"),
    /** Quarantined rows by reason, as first answered. */
    byReason: jsonb("by_reason").$type<Record<string, number>>(),
    /**
     * The policy version (hash) the landing's rows are classified under: the landing's configured policy,
     * restamped by a cutover to the policy it put live (drizzle/0037_classification_deltas.sql); null when
     * the landing wrote no bronze row.
     */
    policyVersion: text("policy_version"),
  },
  (t) => [primaryKey({ columns: [t.pipeline, t.source] })],
);

/**
 * What became of every file a pipeline has seen (view `straggler.sources`):
 * state `landed`, `refused` (with `reason`), `changed_after_landing` or
 * `waiting_to_settle`; size, modification time and SHA-256 of its bytes as
 * last read; for append-only files the bytes and lines landed so far.
 */
export const sourceFiles = straggler.table(
  "source_files",
  {
    pipeline: text("pipeline").notNull(),
    name: text("name").notNull(),
    state: text("state").notNull(),
    reason: text("reason"),
    sizeBytes: bigint("size_bytes", { mode: "number" }),
    mtime: tstz("mtime"),
    sha256: text("sha256"),
    configHash: text("config_hash"),
    landedBytes: bigint("landed_bytes", { mode: "number" }).notNull().default(0),
    landedLines: integer("landed_lines").notNull().default(0),
    rows: integer("rows").notNull().default(0),
    accepted: integer("accepted").notNull().default(0),
    quarantined: integer("quarantined").notNull().default(0),
    firstSeen: tstz("first_seen").notNull().defaultNow(),
    lastSeen: tstz("last_seen").notNull().defaultNow(),
    stateSince: tstz("state_since").notNull().defaultNow(),
    landedAt: tstz("landed_at"),
  },
  (t) => [
    primaryKey({ columns: [t.pipeline, t.name] }),
    check("source_files_state", sql`${t.state} IN ('landed', 'refused', 'changed_after_landing', 'waiting_to_settle')`),
  ],
);

/**
 * Amended events (`admission.dedupe: latest`): a bronze row (`seq`) superseded by a
 * later version of its event (`superseded_by`). Bronze itself never changes;
 * readers of accepted rows leave superseded ones out (src/db/sql/fragments/superseded.ts).
 */
export const supersededEvents = straggler.table(
  "superseded_events",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey(),
    pipeline: text("pipeline").notNull(),
    eventId: text("event_id").notNull(),
    supersededBy: bigint("superseded_by", { mode: "number" }).notNull(),
    recordedAt: tstz("recorded_at").notNull().defaultNow(),
  },
  (t) => [
    index("superseded_events_pipeline_by").on(t.pipeline, t.supersededBy),
    check("superseded_events_superseded_by_check", sql`${t.supersededBy} > ${t.seq}`),
  ],
);

/**
 * Offsets of durable logs (migration 0021): per pipeline, log (`nats:STREAM`) and
 * partition, the last offset whose message landed, written in the landing's transaction.
 * Partition `*` of a NATS stream is its position: every message up to it has landed.
 */
export const logOffsets = straggler.table(
  "log_offsets",
  {
    pipeline: text("pipeline").notNull(),
    log: text("log").notNull(),
    partition: text("partition").notNull(),
    lastOffset: bigint("last_offset", { mode: "bigint" }).notNull(),
    messages: bigint("messages", { mode: "number" }).notNull().default(0),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: "log_offsets_pipeline_log_partition_pk", columns: [t.pipeline, t.log, t.partition] })],
);

/**
 * The fencing token of each pipeline's lease (migration 0027, src/cluster/fencing.ts): `epoch`
 * is the next value of `pipeline_lease_epochs` each time a replica takes the lease; the owner's
 * commits check it FOR SHARE.
 */
export const pipelineLeaseEpochs = straggler.sequence("pipeline_lease_epochs");

export const pipelineLeases = straggler.table("pipeline_leases", {
  pipeline: text("pipeline").primaryKey(),
  epoch: bigint("epoch", { mode: "bigint" }).notNull(),
  owner: text("owner").notNull(),
  takenAt: tstz("taken_at").notNull().defaultNow(),
});

/**
 * Archives of bronze partitions (migration 0023, src/retention/archive.ts): one per partition
 * and pipeline, with its file (the manifest's path), SHA-256 of the data file, the partition's
 * landed_at bounds and the manifest; `restoredAt` is set while its rows are back in bronze.
 */
export const bronzeArchives = straggler.table(
  "bronze_archives",
  {
    partition: text("partition").notNull(),
    pipeline: text("pipeline").notNull(),
    rangeStart: tstz("range_start").notNull(),
    rangeEnd: tstz("range_end").notNull(),
    file: text("file").notNull(),
    sha256: text("sha256").notNull(),
    rows: bigint("rows", { mode: "number" }).notNull(),
    manifest: jsonb("manifest").notNull(),
    archivedAt: tstz("archived_at").notNull().defaultNow(),
    restoredAt: tstz("restored_at"),
  },
  (t) => [primaryKey({ name: "bronze_archives_partition_pipeline_pk", columns: [t.partition, t.pipeline] })],
);

/** An archive's ledger counts by status and reason (`''` for accepted rows) with their event-time range (the horizon guard reads it). */
export const bronzeArchivedCounts = straggler.table(
  "bronze_archived_counts",
  {
    partition: text("partition").notNull(),
    pipeline: text("pipeline").notNull(),
    status: text("status").notNull(),
    reason: text("reason").notNull(),
    rows: bigint("rows", { mode: "number" }).notNull(),
    minEventTime: tstz("min_event_time"),
    maxEventTime: tstz("max_event_time"),
  },
  (t) => [
    primaryKey({ name: "bronze_archived_counts_pk", columns: [t.partition, t.pipeline, t.status, t.reason] }),
    foreignKey({
      name: "bronze_archived_counts_archive_fk",
      columns: [t.partition, t.pipeline],
      foreignColumns: [bronzeArchives.partition, bronzeArchives.pipeline],
    }).onDelete("cascade"),
  ],
);

/**
 * The ledger's counts kept as the stream goes (drizzle/0043_ledger_counts.sql): rows of each pipeline by
 * status and reason (`''` for accepted rows), archived rows included, as `straggler.ledger` and the status
 * read them without counting bronze. A landing adds its record's counts (a trigger on `landed_sources`, one
 * upsert per landing); a window whose aggregate fails and a cutover move rows between them; `drop` removes them.
 */
export const ledgerCounts = straggler.table(
  "ledger_counts",
  {
    pipeline: text("pipeline").notNull(),
    status: text("status").notNull(),
    reason: text("reason").notNull(),
    rows: bigint("rows", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ name: "ledger_counts_pk", columns: [t.pipeline, t.status, t.reason] })],
);
