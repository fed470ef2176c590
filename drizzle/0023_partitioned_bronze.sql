-- Bronze partitioned by landing time (README "Retention and archives", docs/SCALING.md item 3).
--
-- Key: RANGE on landed_at, one partition per UTC calendar month, plus a DEFAULT partition.
--  * landed_at is the landing transaction's clock (now()), so every landing appends to one hot
--    partition (this month's) whatever the event times it carries, and one landing never spans
--    two partitions.
--  * Rows without an event time (NO_TS, BAD_TS quarantine) have a landing time: they have a home.
--  * seq and landed_at grow together (the append lock makes seq the commit order), so a
--    partition is a contiguous stretch of every pipeline's history, and a detached partition
--    leaves no hole in the middle of what the stream still has to read.
--  * Event-time partitioning would prune the correction's reads instead, but a late event would
--    append into an old partition (which then could never be archived and dropped whole), and
--    a row without an event time would have none.
--  * Monthly, not daily: the landing's dedupe probe (src/db/sql/dedupeLanding.ts) looks for each
--    accepted row's event id in every partition (PostgreSQL has no index across partitions),
--    so its cost grows with their number. With daily partitions and 30 days of history a landing
--    ran at 0.36 x the unpartitioned speed; monthly keeps a 30-day horizon to 2 or 3 partitions
--    with rows (BENCHMARKS.md "Bronze partitioned by month"). The price: a month's rows are
--    archived together, so bronze keeps between the horizon and the horizon plus one month.
-- A partitioned table's primary key must include the partition key: (seq, landed_at). seq stays
-- unique (one sequence, bronze_events_seq_seq, kept with its value); nothing references
-- bronze_events(seq) by a foreign key (late_events, superseded_events, event_classifications and
-- the rebuild tables keep seq values, not references), and every other index on bronze was
-- non-unique. Partitions are created ahead by the service (straggler.ensure_bronze_partitions,
-- src/retention/partitions.ts); the DEFAULT partition catches a landing outside them, so a
-- landing never fails for want of a partition, and the next ensure moves such rows into their
-- month's partition.
-- An existing bronze is copied row for row (seq values kept) into partitions made for the
-- months its rows landed in.
ALTER TABLE straggler.bronze_events RENAME TO bronze_events_unpartitioned;
--> statement-breakpoint
ALTER SEQUENCE straggler.bronze_events_seq_seq OWNED BY NONE;
--> statement-breakpoint
DROP VIEW straggler.bronze;
--> statement-breakpoint
DROP VIEW straggler.quarantine;
--> statement-breakpoint
DROP VIEW straggler.ledger;
--> statement-breakpoint
DROP VIEW straggler.amendments;
--> statement-breakpoint
ALTER TABLE straggler.bronze_events_unpartitioned RENAME CONSTRAINT bronze_events_pkey TO bronze_events_unpartitioned_pkey;
--> statement-breakpoint
ALTER INDEX straggler.bronze_events_pipeline_seq RENAME TO bronze_events_unpartitioned_pipeline_seq;
--> statement-breakpoint
ALTER INDEX straggler.bronze_events_pipeline_event_time RENAME TO bronze_events_unpartitioned_pipeline_event_time;
--> statement-breakpoint
ALTER INDEX straggler.bronze_events_pipeline_key_event_time RENAME TO bronze_events_unpartitioned_pipeline_key_event_time;
--> statement-breakpoint
ALTER INDEX straggler.bronze_events_accepted_event_id_seq RENAME TO bronze_events_unpartitioned_accepted_event_id_seq;
--> statement-breakpoint
CREATE TABLE straggler.bronze_events (
	"seq" bigint DEFAULT nextval('straggler.bronze_events_seq_seq'::regclass) NOT NULL,
	"pipeline" text NOT NULL,
	"event_id" text NOT NULL,
	"raw" text NOT NULL,
	"event_time" timestamp with time zone,
	"ingestion_time" timestamp with time zone NOT NULL,
	"group_key" text NOT NULL,
	"value" numeric,
	"status" text NOT NULL,
	"reason" text,
	"detail" text,
	"policy_version" text,
	"source" text NOT NULL,
	"source_line" integer NOT NULL,
	"landed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"input" text DEFAULT 'default' NOT NULL,
	CONSTRAINT "bronze_events_seq_landed_at_pk" PRIMARY KEY ("seq", "landed_at")
) PARTITION BY RANGE ("landed_at");
--> statement-breakpoint
ALTER SEQUENCE straggler.bronze_events_seq_seq OWNED BY straggler.bronze_events.seq;
--> statement-breakpoint
CREATE INDEX bronze_events_pipeline_seq ON straggler.bronze_events USING btree (pipeline, seq);
--> statement-breakpoint
CREATE INDEX bronze_events_pipeline_event_time ON straggler.bronze_events USING btree (pipeline, event_time);
--> statement-breakpoint
CREATE INDEX bronze_events_pipeline_key_event_time ON straggler.bronze_events USING btree (pipeline, group_key, event_time) INCLUDE (value, status, seq);
--> statement-breakpoint
CREATE INDEX bronze_events_accepted_event_id_seq ON straggler.bronze_events USING btree (event_id, pipeline, seq) WHERE status = 'accepted';
--> statement-breakpoint
CREATE TABLE straggler.bronze_events_default PARTITION OF straggler.bronze_events DEFAULT;
--> statement-breakpoint
-- One partition [lo, hi) named `name`: made as a plain table, filled with the DEFAULT
-- partition's rows of its range (if any landed there), then attached. ATTACH takes SHARE UPDATE
-- EXCLUSIVE on bronze_events, so landings and reads go on meanwhile. Returns false when a
-- partition of that name exists already. Used by ensure_bronze_partitions and by a restore.
CREATE FUNCTION straggler.ensure_bronze_partition(name text, lo timestamptz, hi timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass(format('straggler.%I', name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE straggler.%I (LIKE straggler.bronze_events INCLUDING DEFAULTS)', name);
  EXECUTE format('ALTER TABLE straggler.%I ADD CONSTRAINT %I CHECK (landed_at >= %L AND landed_at < %L)', name, name || '_bounds', lo, hi);
  IF EXISTS (SELECT 1 FROM straggler.bronze_events_default WHERE landed_at >= lo AND landed_at < hi) THEN
    EXECUTE format('WITH moved AS (DELETE FROM straggler.bronze_events_default WHERE landed_at >= %L AND landed_at < %L RETURNING *)
                    INSERT INTO straggler.%I SELECT * FROM moved', lo, hi, name);
  END IF;
  EXECUTE format('ALTER TABLE straggler.bronze_events ATTACH PARTITION straggler.%I FOR VALUES FROM (%L) TO (%L)', name, lo, hi);
  EXECUTE format('ALTER TABLE straggler.%I DROP CONSTRAINT %I', name, name || '_bounds');
  RETURN true;
END $$;
--> statement-breakpoint
-- The monthly partitions (UTC calendar months) from the month of first_day to the month of
-- last_day that do not exist yet, named bronze_events_pYYYYMM. Returns how many were made.
CREATE FUNCTION straggler.ensure_bronze_partitions(first_day date, last_day date) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  m date;
  made integer := 0;
BEGIN
  FOR m IN SELECT generate_series(date_trunc('month', first_day), date_trunc('month', last_day), interval '1 month')::date LOOP
    IF straggler.ensure_bronze_partition('bronze_events_p' || to_char(m, 'YYYYMM'),
                                         m::timestamp AT TIME ZONE 'UTC', (m + interval '1 month')::timestamp AT TIME ZONE 'UTC') THEN
      made := made + 1;
    END IF;
  END LOOP;
  RETURN made;
END $$;
--> statement-breakpoint
-- Partitions for every month an existing row landed in, and for this month and the next (as the service keeps them).
SELECT straggler.ensure_bronze_partitions(min((landed_at AT TIME ZONE 'UTC')::date), max((landed_at AT TIME ZONE 'UTC')::date))
  FROM straggler.bronze_events_unpartitioned HAVING count(*) > 0;
--> statement-breakpoint
SELECT straggler.ensure_bronze_partitions((now() AT TIME ZONE 'UTC')::date, ((now() AT TIME ZONE 'UTC') + interval '1 month')::date);
--> statement-breakpoint
INSERT INTO straggler.bronze_events SELECT * FROM straggler.bronze_events_unpartitioned;
--> statement-breakpoint
DROP TABLE straggler.bronze_events_unpartitioned;
--> statement-breakpoint
-- The raw columns never change (0018), now on the partitioned table.
CREATE TRIGGER bronze_raw_unchanged BEFORE UPDATE OF seq, pipeline, event_id, raw, ingestion_time, source, source_line, landed_at
  ON straggler.bronze_events FOR EACH ROW EXECUTE FUNCTION straggler.bronze_raw_unchanged();
--> statement-breakpoint
-- Archives of bronze partitions (src/retention/archive.ts): one per partition and pipeline (each
-- pipeline's rows go to its own retention.archive folder), with its file, SHA-256, bounds and
-- manifest; restored_at is set while its rows are back in bronze (src/retention/restore.ts).
CREATE TABLE straggler.bronze_archives (
	"partition" text NOT NULL,
	"pipeline" text NOT NULL,
	"range_start" timestamp with time zone NOT NULL,
	"range_end" timestamp with time zone NOT NULL,
	"file" text NOT NULL,
	"sha256" text NOT NULL,
	"rows" bigint NOT NULL,
	"manifest" jsonb NOT NULL,
	"archived_at" timestamp with time zone DEFAULT now() NOT NULL,
	"restored_at" timestamp with time zone,
	CONSTRAINT "bronze_archives_partition_pipeline_pk" PRIMARY KEY ("partition", "pipeline")
);
--> statement-breakpoint
-- The ledger counts of an archive's rows by status and reason ('' for accepted rows), with the
-- event-time range of those rows (the horizon guard reads it; null when none has an event time).
CREATE TABLE straggler.bronze_archived_counts (
	"partition" text NOT NULL,
	"pipeline" text NOT NULL,
	"status" text NOT NULL,
	"reason" text NOT NULL,
	"rows" bigint NOT NULL,
	"min_event_time" timestamp with time zone,
	"max_event_time" timestamp with time zone,
	CONSTRAINT "bronze_archived_counts_pk" PRIMARY KEY ("partition", "pipeline", "status", "reason"),
	CONSTRAINT "bronze_archived_counts_archive_fk" FOREIGN KEY ("partition", "pipeline") REFERENCES straggler.bronze_archives ("partition", "pipeline") ON DELETE CASCADE
);
--> statement-breakpoint
-- The counts of archives not restored: the ledger adds them to bronze's own.
CREATE VIEW straggler.archived_rows AS
SELECT c.partition, c.pipeline, c.status, c.reason, c.rows, c.min_event_time, c.max_event_time
  FROM straggler.bronze_archived_counts c
  JOIN straggler.bronze_archives a ON a.partition = c.partition AND a.pipeline = c.pipeline
 WHERE a.restored_at IS NULL;
--> statement-breakpoint
CREATE VIEW straggler.bronze AS
SELECT seq, pipeline, event_id, event_time, ingestion_time, straggler.key_out(group_key) AS group_key, value, status, reason, detail,
       policy_version, source, source_line, landed_at, raw
  FROM straggler.bronze_events;
--> statement-breakpoint
CREATE VIEW straggler.quarantine AS
SELECT seq, pipeline, event_id, reason, detail, event_time, ingestion_time, source, source_line, landed_at, raw
  FROM straggler.bronze_events
 WHERE status = 'quarantined';
--> statement-breakpoint
-- Landed rows per pipeline: those in bronze plus those in archives not restored.
CREATE VIEW straggler.ledger AS
SELECT pipeline, sum(landed)::bigint AS landed, sum(accepted)::bigint AS accepted, sum(quarantined)::bigint AS quarantined
  FROM (SELECT pipeline,
               count(*) AS landed,
               count(*) FILTER (WHERE status = 'accepted') AS accepted,
               count(*) FILTER (WHERE status = 'quarantined') AS quarantined
          FROM straggler.bronze_events
         GROUP BY pipeline
        UNION ALL
        SELECT pipeline, rows, CASE WHEN status = 'accepted' THEN rows ELSE 0 END, CASE WHEN status = 'quarantined' THEN rows ELSE 0 END
          FROM straggler.archived_rows) t
 GROUP BY pipeline;
--> statement-breakpoint
CREATE VIEW straggler.amendments AS
SELECT s.pipeline,
       s.event_id,
       'SUPERSEDED'::text AS reason,
       s.seq AS superseded_seq,
       s.superseded_by AS superseding_seq,
       o.event_time AS old_event_time,
       straggler.key_out(o.group_key) AS old_group_key,
       o.value AS old_value,
       n.event_time AS new_event_time,
       straggler.key_out(n.group_key) AS new_group_key,
       n.value AS new_value,
       o.source AS old_source,
       n.source AS new_source,
       s.recorded_at
  FROM straggler.superseded_events s
  JOIN straggler.bronze_events o ON o.seq = s.seq
  JOIN straggler.bronze_events n ON n.seq = s.superseded_by;
