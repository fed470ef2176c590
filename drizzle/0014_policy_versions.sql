-- Policy versions (src/config/policy.ts, src/stream/policyGuard.ts): per pipeline, each
-- results version with the policy that produces it — every setting that changes results
-- (fields, timestamps, window, watermark, admission) as canonical JSON, and its hash, the
-- policy_version bronze rows are stamped with. One version per pipeline is live: the one
-- straggler.window_results serves and the stream and corrections extend. A pipeline whose
-- configured policy differs from its live one is not streamed.
-- state: live (serving), candidate (built beside the live one, not serving), retired (served before).
CREATE TABLE straggler.policy_versions (
  pipeline text NOT NULL,
  version integer NOT NULL CHECK (version > 0),
  state text NOT NULL CHECK (state IN ('live', 'candidate', 'retired')),
  policy_version text NOT NULL,
  policy text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  live_since timestamptz,
  PRIMARY KEY (pipeline, version)
);
--> statement-breakpoint
CREATE UNIQUE INDEX policy_versions_live ON straggler.policy_versions (pipeline) WHERE state = 'live';
--> statement-breakpoint
CREATE VIEW straggler.results_versions AS
SELECT pipeline, version, state, policy_version, policy::jsonb AS policy, created_at, live_since
  FROM straggler.policy_versions;
--> statement-breakpoint
-- The live results carry the version that produced them.
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
       v.policy_version
  FROM straggler.window_results_table r
  LEFT JOIN straggler.policy_versions v ON v.pipeline = r.pipeline AND v.state = 'live';
