-- The change feed (docs/change-feed.md), kept by the pipelines that set feed.enabled: every change
-- of a published window gets a row here, with a monotonic id per pipeline. Rows are written by the
-- statements that change the results, in their transaction (a data-modifying CTE beside the
-- stream's MERGE, the correction's upsert, the session steps, the cutover; a hold and its release
-- write a marker), never by a trigger: a consumer that stores the last id it applied gets every
-- change once. Id order is commit order per pipeline because every writer holds the pipeline's
-- results lock until it commits.
CREATE TABLE "straggler"."window_changes" (
	"id" bigserial NOT NULL,
	"pipeline" text NOT NULL,
	"change" text NOT NULL,
	"group_key" text,
	"window_start" timestamp with time zone,
	"window_end" timestamp with time zone,
	"revision" integer,
	"count_before" bigint,
	"sum_before" numeric,
	"min_before" numeric,
	"max_before" numeric,
	"count_after" bigint,
	"sum_after" numeric,
	"min_after" numeric,
	"max_after" numeric,
	"batch_id" bigint,
	"run_id" bigint,
	"version" integer,
	"hold_id" bigint,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "window_changes_pipeline_id_pk" PRIMARY KEY("pipeline","id"),
	CONSTRAINT "window_changes_change_check" CHECK ("straggler"."window_changes"."change" IN ('new', 'updated', 'corrected', 'retracted', 'cutover', 'held', 'released'))
);
--> statement-breakpoint
CREATE TABLE "straggler"."window_changes_pruned" (
	"pipeline" text PRIMARY KEY NOT NULL,
	"through_id" bigint NOT NULL,
	"pruned_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "window_changes_hold_markers" ON "straggler"."window_changes" USING btree ("pipeline","id") WHERE change IN ('held', 'released');