-- Rebuild, cut over, roll back (src/lifecycle/rebuild.ts, src/lifecycle/cutover.ts, README
-- "Incidents: hold, rebuild, cut over"). The ledger's raw columns never change; the
-- classification columns of bronze_events (status, reason, detail, event_time, group_key, value,
-- policy_version) are the LIVE version's classification, so every reader of bronze stays as it
-- is. Every other version's classification, results, checkpoint, late windows and supersessions
-- are kept beside it, by version; a cutover swaps them in one transaction.
CREATE FUNCTION straggler.bronze_raw_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.seq IS DISTINCT FROM OLD.seq OR NEW.pipeline IS DISTINCT FROM OLD.pipeline OR NEW.event_id IS DISTINCT FROM OLD.event_id
     OR NEW.raw IS DISTINCT FROM OLD.raw OR NEW.ingestion_time IS DISTINCT FROM OLD.ingestion_time OR NEW.source IS DISTINCT FROM OLD.source
     OR NEW.source_line IS DISTINCT FROM OLD.source_line OR NEW.landed_at IS DISTINCT FROM OLD.landed_at THEN
    RAISE EXCEPTION 'bronze row % of pipeline %: the raw columns (seq, pipeline, event_id, raw, ingestion_time, source, source_line, landed_at) never change', OLD.seq, OLD.pipeline
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER bronze_raw_unchanged BEFORE UPDATE OF seq, pipeline, event_id, raw, ingestion_time, source, source_line, landed_at
  ON straggler.bronze_events FOR EACH ROW EXECUTE FUNCTION straggler.bronze_raw_unchanged();
--> statement-breakpoint
-- Tables (as drizzle-kit writes them from src/db/schemaVersions.ts): source_headers (each CSV
-- source's header line, to read its raw lines again); rebuilds (one per candidate: the ledger's
-- highest seq when it started, progress committed per page, its reconcile); per version beside the
-- live one: event_classifications, superseded_versions, version_window_results,
-- version_checkpoints, version_late_windows; a rebuild's diff against live:
-- rebuild_window_changes (windows added, removed, changed) and rebuild_reason_changes (rows by
-- (before, after) label).
CREATE TABLE "straggler"."event_classifications" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"seq" bigint NOT NULL,
	"event_id" text NOT NULL,
	"event_time" timestamp with time zone,
	"group_key" text NOT NULL,
	"value" numeric,
	"status" text NOT NULL,
	"reason" text,
	"detail" text,
	CONSTRAINT "event_classifications_pipeline_version_seq_pk" PRIMARY KEY("pipeline","version","seq")
);
--> statement-breakpoint
CREATE TABLE "straggler"."rebuild_reason_changes" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"before_reason" text NOT NULL,
	"after_reason" text NOT NULL,
	"rows" bigint NOT NULL,
	CONSTRAINT "rebuild_reason_changes_pipeline_version_before_reason_after_reason_pk" PRIMARY KEY("pipeline","version","before_reason","after_reason")
);
--> statement-breakpoint
CREATE TABLE "straggler"."rebuild_window_changes" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"against_version" integer,
	"change" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"window_end" timestamp with time zone NOT NULL,
	"before_count" bigint,
	"before_sum" numeric,
	"before_min" numeric,
	"before_max" numeric,
	"after_count" bigint,
	"after_sum" numeric,
	"after_min" numeric,
	"after_max" numeric,
	CONSTRAINT "rebuild_window_changes_pipeline_version_group_key_window_start_window_end_pk" PRIMARY KEY("pipeline","version","group_key","window_start","window_end"),
	CONSTRAINT "rebuild_window_changes_change_check" CHECK ("straggler"."rebuild_window_changes"."change" IN ('added', 'removed', 'changed'))
);
--> statement-breakpoint
CREATE TABLE "straggler"."rebuilds" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"status" text NOT NULL,
	"ledger_seq" bigint NOT NULL,
	"done_seq" bigint DEFAULT 0 NOT NULL,
	"rows_done" bigint DEFAULT 0 NOT NULL,
	"reconcile_ok" boolean,
	"reconcile" jsonb,
	"changed_rows" jsonb,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "rebuilds_pipeline_version_pk" PRIMARY KEY("pipeline","version"),
	CONSTRAINT "rebuilds_status_check" CHECK ("straggler"."rebuilds"."status" IN ('running', 'complete'))
);
--> statement-breakpoint
CREATE TABLE "straggler"."source_headers" (
	"pipeline" text NOT NULL,
	"source" text NOT NULL,
	"header" text NOT NULL,
	CONSTRAINT "source_headers_pipeline_source_pk" PRIMARY KEY("pipeline","source")
);
--> statement-breakpoint
CREATE TABLE "straggler"."superseded_versions" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"seq" bigint NOT NULL,
	"event_id" text NOT NULL,
	"superseded_by" bigint NOT NULL,
	CONSTRAINT "superseded_versions_pipeline_version_seq_pk" PRIMARY KEY("pipeline","version","seq")
);
--> statement-breakpoint
CREATE TABLE "straggler"."version_checkpoints" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"batch_id" bigint NOT NULL,
	"last_offset" bigint NOT NULL,
	"max_event_time" timestamp with time zone,
	"watermark" timestamp with time zone,
	"inputs" jsonb,
	CONSTRAINT "version_checkpoints_pipeline_version_pk" PRIMARY KEY("pipeline","version")
);
--> statement-breakpoint
CREATE TABLE "straggler"."version_late_windows" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"window_end" timestamp with time zone NOT NULL,
	"dropped_rows" bigint NOT NULL,
	"max_seq" bigint NOT NULL,
	"first_batch_id" bigint NOT NULL,
	"last_batch_id" bigint NOT NULL,
	"registered_at" timestamp with time zone NOT NULL,
	CONSTRAINT "version_late_windows_pipeline_version_group_key_window_start_window_end_pk" PRIMARY KEY("pipeline","version","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE TABLE "straggler"."version_window_results" (
	"pipeline" text NOT NULL,
	"version" integer NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"window_end" timestamp with time zone NOT NULL,
	"event_count" bigint NOT NULL,
	"value_sum" numeric,
	"value_min" numeric,
	"value_max" numeric,
	"is_final" boolean DEFAULT false NOT NULL,
	"revision" integer DEFAULT 1 NOT NULL,
	"corrected" boolean DEFAULT false NOT NULL,
	"last_batch_id" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "version_window_results_pipeline_version_group_key_window_start_window_end_pk" PRIMARY KEY("pipeline","version","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE INDEX "event_classifications_event_id" ON "straggler"."event_classifications" USING btree ("pipeline","version","event_id") WHERE status = 'accepted';
--> statement-breakpoint
CREATE VIEW straggler.rebuild_diff AS
SELECT pipeline, version, against_version, change, straggler.key_out(group_key) AS group_key, window_start, window_end,
       before_count, before_sum, before_min, before_max, after_count, after_sum, after_min, after_max
  FROM straggler.rebuild_window_changes;
--> statement-breakpoint
CREATE VIEW straggler.rebuild_reclassified AS
SELECT pipeline, version, before_reason, after_reason, rows FROM straggler.rebuild_reason_changes;
--> statement-breakpoint
-- Every version's results: the live one from window_results_table, the others from their store.
CREATE VIEW straggler.window_results_by_version AS
SELECT r.pipeline, v.version, v.state, v.policy_version,
       straggler.key_out(r.group_key) AS group_key, r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END AS value_avg,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END AS status,
       r.revision, r.updated_at
  FROM straggler.window_results_table r
  JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live'
UNION ALL
SELECT r.pipeline, v.version, v.state, v.policy_version,
       straggler.key_out(r.group_key), r.window_start, r.window_end, r.event_count, r.value_sum, r.value_min, r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END,
       r.revision, r.updated_at
  FROM straggler.version_window_results r
  JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.version = r.version AND v.state <> 'live';
