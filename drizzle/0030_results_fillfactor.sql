-- Window results keep 15 % of each page free (fillfactor 85), so that an update that leaves every
-- indexed column as it was -- a correction's upsert of a final window (count, sum, min, max,
-- corrected, revision, updated_at), the stream's MERGE into an open window that stays open -- is a
-- HOT update: a new row version on the same page and no new entry in the table's three indexes.
-- At fillfactor 100 the pages are full and every such update moved the row and wrote three index
-- entries. Measured on the peers workload (300,000 events, 2,919 windows corrected): 2,771 of
-- 2,771 updates HOT against 0, the upsert 32 ms against 50 ms (BENCHMARKS.md "The main path on the
-- peers workload, profiled"). The setting applies to pages written from now on; existing pages
-- keep their rows until they are next rewritten (no rewrite here: VACUUM FULL would lock the table).
ALTER TABLE straggler.window_results_table SET (fillfactor = 85);
--> statement-breakpoint
ALTER TABLE straggler.version_window_results SET (fillfactor = 85);
