-- The lateness distribution kept as the stream goes (issue 26 item 2; docs/lateness.md). Each
-- micro-batch adds its accepted rows in the statement that closes it (src/db/sql/closeBatch.ts), so
-- the delay advisor reads counts per distinct value instead of replaying bronze.
--   lateness_us     ingestion time - event time of an accepted row, exact µs (the distribution)
--   pair_slack_ms   per late-at-delay-0 (event, window) pair: floor((M - window end) / 1 ms), M the
--                   max accepted event time of earlier batches; late at delay d iff d <= value
--   event_slack_ms  per event with such a pair: the largest of its pairs' values
--   window_slack_ms per (group key, window) with such a pair: the value of its latest pair (the
--                   largest, M never goes down); moved, not added, when a later batch raises it
--   batches         value 0: the batches counted (the histogram covers the pipeline's history
--                   when it equals the checkpoint's batch id)
CREATE TABLE straggler.lateness_histogram (
  pipeline text NOT NULL,
  measure text NOT NULL CHECK (measure IN ('lateness_us', 'pair_slack_ms', 'event_slack_ms', 'window_slack_ms', 'batches')),
  value bigint NOT NULL,
  rows bigint NOT NULL,
  PRIMARY KEY (pipeline, measure, value)
);
--> statement-breakpoint
-- The latest slack of each (group key, window) late at delay 0: what window_slack_ms moves from.
CREATE TABLE straggler.lateness_windows (
  pipeline text NOT NULL,
  group_key text NOT NULL,
  window_end_us bigint NOT NULL,
  slack_ms bigint NOT NULL,
  PRIMARY KEY (pipeline, group_key, window_end_us)
);
