-- Holds (src/lifecycle/hold.ts, README "Incidents: hold"): while a pipeline is held,
-- straggler.window_results serves the rows it served when the hold began (copied into
-- held_window_results, every row marked held) while landing, the stream and corrections
-- go on underneath; a release deletes the copy and ends the hold in one transaction, so
-- readers see every new value at once. At most one open hold per pipeline. `rule` names
-- the pipelines-file rule that held it automatically (null: held by hand), `tripped_by`
-- the rows that tripped it.
CREATE TABLE straggler.pipeline_holds (
  hold_id bigserial PRIMARY KEY,
  pipeline text NOT NULL,
  reason text NOT NULL,
  rule text CHECK (rule IN ('onFutureTs', 'quarantineShare')),
  tripped_by jsonb,
  batch_id bigint,
  held_at timestamptz NOT NULL DEFAULT now(),
  released_at timestamptz,
  -- the stream's last batch when it was released: a quarantine-share rule counts only later batches
  released_after_batch bigint
);
--> statement-breakpoint
CREATE UNIQUE INDEX pipeline_holds_open ON straggler.pipeline_holds (pipeline) WHERE released_at IS NULL;
--> statement-breakpoint
CREATE INDEX pipeline_holds_pipeline ON straggler.pipeline_holds (pipeline, hold_id);
--> statement-breakpoint
CREATE TABLE straggler.held_window_results (
  pipeline text NOT NULL,
  hold_id bigint NOT NULL,
  group_key text,
  window_start timestamptz NOT NULL,
  window_end timestamptz NOT NULL,
  event_count bigint NOT NULL,
  value_sum numeric,
  value_min numeric,
  value_max numeric,
  value_avg numeric,
  status text NOT NULL,
  revision integer NOT NULL,
  updated_at timestamptz NOT NULL,
  awaiting_correction boolean NOT NULL,
  results_version integer,
  policy_version text
);
--> statement-breakpoint
CREATE INDEX held_window_results_pipeline_start ON straggler.held_window_results (pipeline, window_start);
--> statement-breakpoint
CREATE VIEW straggler.holds AS
SELECT hold_id, pipeline, reason, rule, tripped_by, batch_id, held_at, released_at
  FROM straggler.pipeline_holds;
--> statement-breakpoint
CREATE OR REPLACE VIEW straggler.window_results AS
SELECT r.pipeline,
       straggler.key_out(r.group_key) AS group_key,
       r.window_start,
       r.window_end,
       r.event_count,
       r.value_sum,
       r.value_min,
       r.value_max,
       CASE WHEN r.event_count > 0 THEN r.value_sum / r.event_count END AS value_avg,
       CASE WHEN r.corrected THEN 'corrected' WHEN r.is_final THEN 'final' ELSE 'open' END AS status,
       r.revision,
       r.updated_at,
       EXISTS (SELECT 1 FROM straggler.late_windows l
                WHERE l.pipeline = r.pipeline AND l.group_key = r.group_key
                  AND l.window_start = r.window_start AND l.window_end = r.window_end) AS awaiting_correction,
       v.version AS results_version,
       v.policy_version,
       false AS held
  FROM straggler.window_results_table r
  LEFT JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live'
 WHERE NOT EXISTS (SELECT 1 FROM straggler.pipeline_holds h WHERE h.pipeline = r.pipeline AND h.released_at IS NULL)
UNION ALL
SELECT pipeline, group_key, window_start, window_end, event_count, value_sum, value_min, value_max, value_avg,
       status, revision, updated_at, awaiting_correction, results_version, policy_version, true AS held
  FROM straggler.held_window_results;
