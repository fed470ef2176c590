-- The ledger's counts kept as the stream goes (issue 26: nothing on the pipeline page's first paint
-- counts bronze). Rows of each pipeline by status and reason ('' for accepted rows), archived rows
-- included: what the status (GET /pipelines, `straggler status`, the page) and /metrics read, in
-- O(reasons) instead of a scan of the pipeline's bronze. The view `straggler.ledger` still counts
-- bronze and the archives (the check the kept counts are tested against; reconcile counts bronze too).
--   * a landing adds its record's counts (landed_sources: accepted, quarantined by reason, the
--     dedupe's DUPLICATE / AMENDED_DUPLICATE included): a statement trigger on landed_sources, one
--     upsert per landing statement whatever its rows (nothing per bronze row; an AFTER INSERT trigger
--     with a transition table on bronze itself would make COPY into the partitioned table insert row
--     by row);
--   * a window whose aggregate fails moves its rows from accepted to INVALID_VALUE
--     (src/db/sql/stream/recordWindowFailure.ts), a cutover moves the rows it reclassifies
--     (src/db/sql/lifecycle/versionSwap.ts), in their own transactions;
--   * archiving and restoring move rows between bronze and its archives: the counts, which hold both,
--     do not change; `straggler drop` deletes the pipeline's rows (a table keyed by pipeline).
-- Upserts go in (pipeline, status, reason) order, so two transactions upserting them never deadlock.
CREATE TABLE "straggler"."ledger_counts" (
	"pipeline" text NOT NULL,
	"status" text NOT NULL,
	"reason" text NOT NULL,
	"rows" bigint NOT NULL,
	CONSTRAINT "ledger_counts_pk" PRIMARY KEY("pipeline","status","reason")
);
--> statement-breakpoint
CREATE FUNCTION straggler.ledger_counts_add_landings() RETURNS trigger
  LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO straggler.ledger_counts AS c (pipeline, status, reason, rows)
  SELECT t.pipeline, t.status, t.reason, sum(t.n)::bigint
    FROM (SELECT l.pipeline, 'accepted'::text AS status, ''::text AS reason, l.accepted::bigint AS n FROM landed l WHERE l.accepted <> 0
          UNION ALL
          SELECT l.pipeline, 'quarantined', r.key, r.value::bigint FROM landed l CROSS JOIN LATERAL jsonb_each_text(l.by_reason) r
           WHERE l.quarantined <> 0 AND jsonb_typeof(l.by_reason) = 'object') t
   GROUP BY t.pipeline, t.status, t.reason
   ORDER BY t.pipeline, t.status, t.reason
  ON CONFLICT (pipeline, status, reason) DO UPDATE SET rows = c.rows + EXCLUDED.rows;
  RETURN NULL;
END
$fn$;
--> statement-breakpoint
CREATE TRIGGER landed_sources_ledger_counts AFTER INSERT ON straggler.landed_sources
  REFERENCING NEW TABLE AS landed FOR EACH STATEMENT EXECUTE FUNCTION straggler.ledger_counts_add_landings();
--> statement-breakpoint
-- The rows landed before this migration: counted once from bronze and the archives not restored.
INSERT INTO straggler.ledger_counts (pipeline, status, reason, rows)
SELECT pipeline, status, reason, sum(n)::bigint
  FROM (SELECT pipeline, status, coalesce(reason, '') AS reason, count(*) AS n FROM straggler.bronze_events GROUP BY pipeline, status, reason
        UNION ALL
        SELECT pipeline, status, reason, rows FROM straggler.archived_rows) t
 GROUP BY pipeline, status, reason;
--> statement-breakpoint
COMMENT ON TABLE straggler.ledger_counts IS 'Rows per pipeline by status and reason ('''' for accepted rows), archived rows included, kept by each landing, window failure and cutover: the view ledger counts the same from bronze';
