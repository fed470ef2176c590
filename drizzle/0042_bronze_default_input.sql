-- The default input costs a bronze row nothing: a landing of a source that names no input writes
-- NULL (8 bytes a row fewer than the text `default` on the peers workload), and every reader takes
-- NULL as `default` (the micro-batch's read, archives). Rows written before, or by hand without the
-- column, keep `default`.
ALTER TABLE "straggler"."bronze_events" ALTER COLUMN "input" DROP NOT NULL;
