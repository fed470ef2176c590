-- Offsets of durable logs (a NATS JetStream stream today; a Kafka topic would fit the same
-- rows): per pipeline, log and partition, the last offset whose message has landed in
-- bronze. Written in the landing's transaction, with the rows, so a message lands exactly
-- once: a redelivered message at or below its partition's offset is acknowledged and not
-- landed again. For a NATS stream the offset is the stream sequence; the partition is the
-- configured subject token ('' when none), and the row with partition '*' (a wildcard, never
-- a subject token) is the stream's position: every message up to it has landed, so a
-- consumer restarted from the database resumes just after it.
CREATE TABLE straggler.log_offsets (
  pipeline text NOT NULL,
  log text NOT NULL,
  partition text NOT NULL,
  last_offset bigint NOT NULL,
  messages bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT log_offsets_pipeline_log_partition_pk PRIMARY KEY (pipeline, log, partition)
);
--> statement-breakpoint
-- straggler.sources names the kind of a log landing (source 'nats:STREAM/partition@seq').
CREATE OR REPLACE VIEW straggler.sources AS
SELECT f.pipeline, f.name AS source, 'file'::text AS kind, f.state, f.reason, f.size_bytes, f.mtime, f.sha256,
       f.rows, f.accepted, f.quarantined, f.landed_bytes, f.first_seen, f.last_seen, f.state_since, f.landed_at
  FROM straggler.source_files f
UNION ALL
SELECT l.pipeline, l.source,
       CASE WHEN l.source LIKE 'http:%' THEN 'http' WHEN l.source LIKE 'stdin:%' THEN 'stdin' WHEN l.source LIKE 'replay:%' THEN 'replay'
            WHEN l.source LIKE 'nats:%' THEN 'nats' ELSE 'file' END,
       'landed', NULL, NULL, NULL, l.sha256, l.rows, l.accepted, l.quarantined, NULL, l.landed_at, l.landed_at, l.landed_at, l.landed_at
  FROM straggler.landed_sources l
 WHERE NOT EXISTS (SELECT 1 FROM straggler.source_files f
                    WHERE f.pipeline = l.pipeline AND (f.name = l.source OR left(l.source, length(f.name) + 1) = f.name || '@'));
