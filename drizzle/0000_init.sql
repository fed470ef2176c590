CREATE SCHEMA IF NOT EXISTS "straggler";
--> statement-breakpoint
CREATE TABLE "straggler"."batch_progress" (
	"pipeline" text NOT NULL,
	"batch_id" bigint NOT NULL,
	"trigger" text NOT NULL,
	"start_offset" bigint NOT NULL,
	"end_offset" bigint NOT NULL,
	"num_input_rows" bigint NOT NULL,
	"num_quarantined_rows" bigint NOT NULL,
	"input_rows_per_second" double precision,
	"processed_rows_per_second" double precision,
	"duration_ms" integer NOT NULL,
	"event_time_min" timestamp(3) with time zone,
	"event_time_max" timestamp(3) with time zone,
	"event_time_avg" timestamp(3) with time zone,
	"watermark" timestamp(3) with time zone,
	"next_watermark" timestamp(3) with time zone,
	"num_rows_dropped_by_watermark" bigint NOT NULL,
	"num_late_windows" integer NOT NULL,
	"num_rows_updated" integer NOT NULL,
	"num_rows_finalized" integer NOT NULL,
	"num_rows_total" integer NOT NULL,
	"timestamp" timestamp(3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "batch_progress_pipeline_batch_id_pk" PRIMARY KEY("pipeline","batch_id")
);
--> statement-breakpoint
CREATE TABLE "straggler"."bronze_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"pipeline" text NOT NULL,
	"event_id" text NOT NULL,
	"raw" text NOT NULL,
	"event_time" timestamp(3) with time zone,
	"ingestion_time" timestamp(3) with time zone NOT NULL,
	"group_key" text NOT NULL,
	"value" numeric,
	"status" text NOT NULL,
	"reason" text,
	"detail" text,
	"policy_version" text NOT NULL,
	"source" text NOT NULL,
	"source_line" integer NOT NULL,
	"landed_at" timestamp(3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "straggler"."checkpoints" (
	"pipeline" text PRIMARY KEY NOT NULL,
	"batch_id" bigint DEFAULT -1 NOT NULL,
	"last_offset" bigint DEFAULT 0 NOT NULL,
	"max_event_time" timestamp(3) with time zone,
	"watermark" timestamp(3) with time zone,
	"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "straggler"."landed_sources" (
	"pipeline" text NOT NULL,
	"source" text NOT NULL,
	"sha256" text NOT NULL,
	"rows" integer NOT NULL,
	"accepted" integer NOT NULL,
	"quarantined" integer NOT NULL,
	"first_seq" bigint,
	"last_seq" bigint,
	"landed_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "landed_sources_pipeline_source_pk" PRIMARY KEY("pipeline","source")
);
--> statement-breakpoint
CREATE TABLE "straggler"."late_events" (
	"pipeline" text NOT NULL,
	"seq" bigint NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp(3) with time zone NOT NULL,
	"window_end" timestamp(3) with time zone NOT NULL,
	"batch_id" bigint NOT NULL,
	CONSTRAINT "late_events_pipeline_seq_window_start_pk" PRIMARY KEY("pipeline","seq","window_start")
);
--> statement-breakpoint
CREATE TABLE "straggler"."late_windows" (
	"pipeline" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp(3) with time zone NOT NULL,
	"window_end" timestamp(3) with time zone NOT NULL,
	"dropped_rows" bigint NOT NULL,
	"max_seq" bigint NOT NULL,
	"first_batch_id" bigint NOT NULL,
	"last_batch_id" bigint NOT NULL,
	"registered_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "late_windows_pipeline_group_key_window_start_window_end_pk" PRIMARY KEY("pipeline","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE TABLE "straggler"."window_results_table" (
	"pipeline" text NOT NULL,
	"group_key" text NOT NULL,
	"window_start" timestamp(3) with time zone NOT NULL,
	"window_end" timestamp(3) with time zone NOT NULL,
	"event_count" bigint NOT NULL,
	"value_sum" numeric,
	"value_min" numeric,
	"value_max" numeric,
	"is_final" boolean DEFAULT false NOT NULL,
	"revision" integer DEFAULT 1 NOT NULL,
	"corrected" boolean DEFAULT false NOT NULL,
	"last_batch_id" bigint,
	"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "window_results_table_pipeline_group_key_window_start_window_end_pk" PRIMARY KEY("pipeline","group_key","window_start","window_end")
);
--> statement-breakpoint
CREATE INDEX "bronze_events_pipeline_seq" ON "straggler"."bronze_events" USING btree ("pipeline","seq");--> statement-breakpoint
CREATE INDEX "bronze_events_pipeline_event_time" ON "straggler"."bronze_events" USING btree ("pipeline","event_time");--> statement-breakpoint
CREATE INDEX "bronze_events_accepted_event_id" ON "straggler"."bronze_events" USING btree ("pipeline","event_id") WHERE status = 'accepted';--> statement-breakpoint
CREATE INDEX "late_events_window" ON "straggler"."late_events" USING btree ("pipeline","group_key","window_start","window_end");--> statement-breakpoint
CREATE INDEX "window_results_open_end" ON "straggler"."window_results_table" USING btree ("pipeline","window_end") WHERE NOT is_final;--> statement-breakpoint
CREATE INDEX "window_results_pipeline_start" ON "straggler"."window_results_table" USING btree ("pipeline","window_start");