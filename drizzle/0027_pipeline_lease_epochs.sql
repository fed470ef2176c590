-- The fencing token of each pipeline's lease (src/cluster/fencing.ts). The lease itself is a
-- session-level advisory lock held by the owning replica's lease connection; this row holds the
-- epoch of its latest taking. A replica that takes the lock sets `epoch` to the next value of
-- `pipeline_lease_epochs` (never handed out twice, even to a pipeline dropped and configured
-- again) and keeps it as its token; each of its commits for the pipeline (a micro-batch, a
-- folder landing, a log landing) reads the row FOR SHARE just before COMMIT and rolls back when
-- `epoch` is no longer its token. The row lock orders the two: a taking's UPDATE waits for a
-- writer that has read the row, and a writer that reads the row after the taking sees the new
-- epoch.
CREATE SEQUENCE straggler.pipeline_lease_epochs;
--> statement-breakpoint
CREATE TABLE straggler.pipeline_leases (
  pipeline text PRIMARY KEY,
  epoch bigint NOT NULL,
  owner text NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now()
);
