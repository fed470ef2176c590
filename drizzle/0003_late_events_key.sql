DROP INDEX "straggler"."late_events_window";--> statement-breakpoint
ALTER TABLE "straggler"."late_events" DROP CONSTRAINT "late_events_pipeline_seq_window_start_pk";--> statement-breakpoint
ALTER TABLE "straggler"."late_events" ADD CONSTRAINT "late_events_pipeline_group_key_window_start_window_end_seq_pk" PRIMARY KEY("pipeline","group_key","window_start","window_end","seq");