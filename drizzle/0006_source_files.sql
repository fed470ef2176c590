-- What became of every file a pipeline has seen: landed, refused (with its reason),
-- changed after landing, or waiting to settle. Landings of files are also in
-- landed_sources (one row per landed piece); this table is the file's own record.
CREATE TABLE "straggler"."source_files" (
	"pipeline" text NOT NULL,
	"name" text NOT NULL,
	"state" text NOT NULL,
	"reason" text,
	"size_bytes" bigint,
	"mtime" timestamp (3) with time zone,
	"sha256" text,
	"config_hash" text,
	"landed_bytes" bigint DEFAULT 0 NOT NULL,
	"landed_lines" integer DEFAULT 0 NOT NULL,
	"rows" integer DEFAULT 0 NOT NULL,
	"accepted" integer DEFAULT 0 NOT NULL,
	"quarantined" integer DEFAULT 0 NOT NULL,
	"first_seen" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_seen" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"state_since" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"landed_at" timestamp (3) with time zone,
	CONSTRAINT "source_files_pipeline_name_pk" PRIMARY KEY("pipeline","name"),
	CONSTRAINT "source_files_state" CHECK ("state" IN ('landed', 'refused', 'changed_after_landing', 'waiting_to_settle'))
);
--> statement-breakpoint
-- One row per source: every file (from source_files), and every other landed
-- source (HTTP requests, stdin, replay micro-batches, files landed before
-- source_files existed). The pieces of an append-only file (`name@offset`)
-- count under their file.
CREATE VIEW straggler.sources AS
SELECT f.pipeline, f.name AS source, 'file'::text AS kind, f.state, f.reason, f.size_bytes, f.mtime, f.sha256,
       f.rows, f.accepted, f.quarantined, f.landed_bytes, f.first_seen, f.last_seen, f.state_since, f.landed_at
  FROM straggler.source_files f
UNION ALL
SELECT l.pipeline, l.source,
       CASE WHEN l.source LIKE 'http:%' THEN 'http' WHEN l.source LIKE 'stdin:%' THEN 'stdin' WHEN l.source LIKE 'replay:%' THEN 'replay' ELSE 'file' END,
       'landed', NULL, NULL, NULL, l.sha256, l.rows, l.accepted, l.quarantined, NULL, l.landed_at, l.landed_at, l.landed_at, l.landed_at
  FROM straggler.landed_sources l
 WHERE NOT EXISTS (SELECT 1 FROM straggler.source_files f
                    WHERE f.pipeline = l.pipeline AND (f.name = l.source OR left(l.source, length(f.name) + 1) = f.name || '@'));
