-- The fencing token of each pipeline's lease (src/cluster/fencing.ts). The lease itself is a
-- session-level advisory lock held by the owning replica's lease connection; this row counts
-- the takeovers. A replica that takes the lock raises `epoch` and keeps the new value as its
-- token; each of its commits for the pipeline (a micro-batch, a folder landing, a log landing)
-- reads the row FOR SHARE just before COMMIT and rolls back when `epoch` is no longer its
-- token. The row lock orders the two: a takeover's UPDATE waits for a writer that has read the
-- row, and a writer that reads the row after the takeover sees the new epoch.
CREATE TABLE straggler.pipeline_leases (
  pipeline text PRIMARY KEY,
  epoch bigint NOT NULL,
  owner text NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now()
);
