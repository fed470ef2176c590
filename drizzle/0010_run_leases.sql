-- Correction runs hold a lease: a run renews lease_until while it works; a
-- 'running' row whose lease has expired is marked 'abandoned' by whoever looks
-- next. A cron slot is taken only by a run that succeeded or is running, so a
-- failed or abandoned slot can run again.
ALTER TABLE "straggler"."correction_runs" ADD COLUMN "lease_until" timestamp(3) with time zone;
--> statement-breakpoint
-- Rows left 'running' before leases existed: their lease is over already.
UPDATE "straggler"."correction_runs" SET "lease_until" = "started_at" WHERE "status" = 'running';
--> statement-breakpoint
DROP INDEX "straggler"."correction_runs_cron_slot";
--> statement-breakpoint
CREATE UNIQUE INDEX "correction_runs_cron_slot" ON "straggler"."correction_runs" USING btree ("pipeline","cron_slot")
  WHERE cron_slot IS NOT NULL AND status IN ('running', 'succeeded');
--> statement-breakpoint
CREATE INDEX "correction_runs_running" ON "straggler"."correction_runs" USING btree ("pipeline","lease_until") WHERE status = 'running';
--> statement-breakpoint
-- Readers see a run whose lease expired as abandoned even before a sweep has written it.
CREATE OR REPLACE VIEW straggler.correction_history AS
SELECT run_id, pipeline, trigger, cron_slot, range_start, range_end, group_keys,
       CASE WHEN status = 'running' AND lease_until < now() THEN 'abandoned' ELSE status END AS status,
       bronze_snapshot, windows_examined, windows_changed, events_recovered, started_at, finished_at, duration_ms,
       CASE WHEN status = 'running' AND lease_until < now()
            THEN 'lease expired at ' || to_char(lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ': the process running it stopped or lost the database before it finished; its changes were rolled back'
            ELSE error END AS error,
       lease_until
  FROM straggler.correction_runs;
