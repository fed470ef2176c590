-- Session windows in update mode (docs/DESIGN.md "Session windows"): when an event extends a
-- session or merges two, the stream removes the superseded rows from the results in the same
-- transaction as it writes the new one; a correction run that merges or splits sessions does
-- the same. Every removed row is kept here, with why (extended, merged, corrected) and by which
-- micro-batch or correction run, and the row that replaced it. `id` grows with every removal, so
-- a consumer follows the view `straggler.retractions` by the last id it has read.
CREATE TABLE straggler.session_retractions (
  id bigserial PRIMARY KEY,
  pipeline text NOT NULL,
  group_key text NOT NULL,
  window_start timestamptz NOT NULL,
  window_end timestamptz NOT NULL,
  event_count bigint NOT NULL,
  value_sum numeric,
  value_min numeric,
  value_max numeric,
  revision integer NOT NULL,
  was_final boolean NOT NULL,
  reason text NOT NULL CHECK (reason IN ('extended', 'merged', 'corrected')),
  batch_id bigint,
  run_id bigint,
  replaced_by_start timestamptz,
  replaced_by_end timestamptz,
  retracted_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((reason = 'corrected') = (run_id IS NOT NULL) AND (reason = 'corrected') = (batch_id IS NULL))
);
--> statement-breakpoint
CREATE INDEX session_retractions_pipeline_id ON straggler.session_retractions (pipeline, id);
--> statement-breakpoint
CREATE VIEW straggler.retractions AS
SELECT id, pipeline, straggler.key_out(group_key) AS group_key, window_start, window_end,
       event_count, value_sum, value_min, value_max, revision, was_final, reason, batch_id, run_id,
       replaced_by_start, replaced_by_end, retracted_at
  FROM straggler.session_retractions;
