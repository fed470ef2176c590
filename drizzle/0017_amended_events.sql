-- Amended events (admission.dedupe: latest; README "Amended events"): an event re-sent with
-- the same id and other content (event time, group key or value) supersedes the version
-- accepted before. Bronze stays as it landed — the earlier row keeps status accepted, its raw
-- text and its classification — and the supersession is recorded here, keyed by the
-- superseded row's seq: every reader of accepted rows (the stream, the correction's
-- recompute, reconcile, lateness) leaves out a row superseded by a row it can see
-- (superseded_by at or below the seq it reads up to). Written in the landing's transaction,
-- so a supersession commits with the row that makes it.
CREATE TABLE straggler.superseded_events (
  seq bigint PRIMARY KEY,
  pipeline text NOT NULL,
  event_id text NOT NULL,
  superseded_by bigint NOT NULL CHECK (superseded_by > seq),
  recorded_at timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The stream reads the supersessions its batch's rows make: by pipeline and superseding seq.
CREATE INDEX superseded_events_pipeline_by ON straggler.superseded_events (pipeline, superseded_by);
--> statement-breakpoint
-- The amendments: each superseded version beside the version that superseded it (reason
-- SUPERSEDED), with both versions' event time, group key and value.
CREATE VIEW straggler.amendments AS
SELECT s.pipeline,
       s.event_id,
       'SUPERSEDED'::text AS reason,
       s.seq AS superseded_seq,
       s.superseded_by AS superseding_seq,
       o.event_time AS old_event_time,
       straggler.key_out(o.group_key) AS old_group_key,
       o.value AS old_value,
       n.event_time AS new_event_time,
       straggler.key_out(n.group_key) AS new_group_key,
       n.value AS new_value,
       o.source AS old_source,
       n.source AS new_source,
       s.recorded_at
  FROM straggler.superseded_events s
  JOIN straggler.bronze_events o ON o.seq = s.seq
  JOIN straggler.bronze_events n ON n.seq = s.superseded_by;
