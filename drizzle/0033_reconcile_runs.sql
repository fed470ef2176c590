-- Continuous reconcile (docs/continuous-reconcile.md): every check of final windows against
-- bronze is a run in reconcile_runs (the slice of event time it checked, what it found), each
-- window it found differing is a row of reconcile_mismatches until a correction run recomputes it
-- (corrected_by), and the audit row of that correction names the reconcile run (reconcile_run_id).
CREATE TABLE "straggler"."reconcile_mismatches" (
	"run_id" bigint NOT NULL,
	"pipeline" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"window_end" timestamp with time zone NOT NULL,
	"stored" jsonb,
	"expected" jsonb,
	"corrected_by" bigint,
	CONSTRAINT "reconcile_mismatches_run_id_group_key_window_start_window_end_pk" PRIMARY KEY("run_id","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE TABLE "straggler"."reconcile_runs" (
	"run_id" bigserial PRIMARY KEY NOT NULL,
	"pipeline" text NOT NULL,
	"trigger" text NOT NULL,
	"cron_slot" timestamp with time zone,
	"sample" text NOT NULL,
	"range_start" timestamp with time zone,
	"range_end" timestamp with time zone,
	"status" text NOT NULL,
	"bronze_snapshot" bigint,
	"watermark" timestamp with time zone,
	"windows_checked" integer,
	"windows_mismatched" integer,
	"windows_failed" integer,
	"ledger_balanced" boolean,
	"error" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "reconcile_runs_status_check" CHECK ("straggler"."reconcile_runs"."status" IN ('running', 'succeeded', 'failed'))
);
--> statement-breakpoint
ALTER TABLE "straggler"."corrections" ADD COLUMN "reconcile_run_id" bigint;--> statement-breakpoint
CREATE INDEX "reconcile_mismatches_open" ON "straggler"."reconcile_mismatches" USING btree ("pipeline","group_key","window_start") WHERE corrected_by IS NULL;--> statement-breakpoint
CREATE INDEX "reconcile_runs_pipeline" ON "straggler"."reconcile_runs" USING btree ("pipeline","run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "reconcile_runs_cron_slot" ON "straggler"."reconcile_runs" USING btree ("pipeline","cron_slot") WHERE cron_slot IS NOT NULL;;--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.correction_audit AS
SELECT run_id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end, revision_before, revision_after,
       count_before, sum_before, min_before, max_before, count_after, sum_after, min_after, max_after,
       late_event_count, late_event_ids, corrected_at, reconcile_run_id
  FROM straggler.corrections;
