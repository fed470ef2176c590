CREATE TABLE "straggler"."correction_runs" (
	"run_id" bigserial PRIMARY KEY NOT NULL,
	"pipeline" text NOT NULL,
	"trigger" text NOT NULL,
	"cron_slot" timestamp(3) with time zone,
	"range_start" timestamp(3) with time zone,
	"range_end" timestamp(3) with time zone,
	"group_keys" text[],
	"status" text NOT NULL,
	"bronze_snapshot" bigint,
	"windows_examined" integer,
	"windows_changed" integer,
	"events_recovered" integer,
	"started_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp(3) with time zone,
	"duration_ms" integer,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "straggler"."corrections" (
	"run_id" bigint NOT NULL,
	"pipeline" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp(3) with time zone NOT NULL,
	"window_end" timestamp(3) with time zone NOT NULL,
	"revision_before" integer,
	"revision_after" integer NOT NULL,
	"count_before" bigint,
	"sum_before" numeric,
	"min_before" numeric,
	"max_before" numeric,
	"count_after" bigint NOT NULL,
	"sum_after" numeric,
	"min_after" numeric,
	"max_after" numeric,
	"late_event_count" integer NOT NULL,
	"late_event_ids" text[] NOT NULL,
	"corrected_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "corrections_run_id_group_key_window_start_window_end_pk" PRIMARY KEY("run_id","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE INDEX "correction_runs_pipeline" ON "straggler"."correction_runs" USING btree ("pipeline","run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "correction_runs_cron_slot" ON "straggler"."correction_runs" USING btree ("pipeline","cron_slot") WHERE cron_slot IS NOT NULL;--> statement-breakpoint
CREATE INDEX "corrections_window" ON "straggler"."corrections" USING btree ("pipeline","group_key","window_start");--> statement-breakpoint
CREATE INDEX "bronze_events_pipeline_key_event_time" ON "straggler"."bronze_events" USING btree ("pipeline","group_key","event_time");