-- The correction's recompute reads one key's accepted events of one window (recomputeTargets.ts):
-- by (pipeline, group key, event time), then value, status and seq from the row. With those three
-- INCLUDEd, the read is an index-only scan on pages the visibility map marks all-visible (bronze is
-- append-only: autovacuum marks them soon after they land), so its cost stops growing with the
-- heap pages a long history spreads a window over. Same name and key columns as the index it
-- replaces (0002); wider entries cost the landing a little (BENCHMARKS.md). The rebuild blocks
-- writes to bronze while it runs (minutes on a bronze of tens of millions of rows).
DROP INDEX IF EXISTS straggler.bronze_events_pipeline_key_event_time;
--> statement-breakpoint
CREATE INDEX bronze_events_pipeline_key_event_time ON straggler.bronze_events USING btree (pipeline, group_key, event_time) INCLUDE (value, status, seq);
