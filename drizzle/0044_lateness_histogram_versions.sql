-- The lateness histogram carried with the policy version (issue 26 item 2; docs/lateness.md). A stored
-- (not live) version keeps its histogram beside its results, as version_window_results keeps its windows:
--   version_lateness_histogram  as straggler.lateness_histogram (migration 0034), per version
--   version_lateness_windows    as straggler.lateness_windows, per version
--   version_lateness_coverage   what the version's histogram has counted: every recorded batch up to
--                               through_batch_id (-1: none), and m_us, the max accepted event time of the
--                               version's rows with seq <= m_seq (null: none), which the next batch's pairs
--                               are late against
-- A rebuild counts its candidate's (src/lifecycle/rebuild.ts); a cutover counts the batches recorded since
-- into the target's, stores the live one under its number and puts the target's in its place
-- (src/db/sql/lateness/histogramVersions.ts): cost the histogram's rows, not the ledger.
CREATE TABLE straggler.version_lateness_histogram (
  pipeline text NOT NULL,
  version integer NOT NULL,
  measure text NOT NULL CHECK (measure IN ('lateness_us', 'pair_slack_ms', 'event_slack_ms', 'window_slack_ms', 'batches')),
  value bigint NOT NULL,
  rows bigint NOT NULL,
  PRIMARY KEY (pipeline, version, measure, value)
);
--> statement-breakpoint
CREATE TABLE straggler.version_lateness_windows (
  pipeline text NOT NULL,
  version integer NOT NULL,
  group_key text NOT NULL,
  window_end_us bigint NOT NULL,
  slack_ms bigint NOT NULL,
  PRIMARY KEY (pipeline, version, group_key, window_end_us)
);
--> statement-breakpoint
CREATE TABLE straggler.version_lateness_coverage (
  pipeline text NOT NULL,
  version integer NOT NULL,
  through_batch_id bigint NOT NULL,
  m_seq bigint NOT NULL,
  m_us bigint,
  PRIMARY KEY (pipeline, version)
);
