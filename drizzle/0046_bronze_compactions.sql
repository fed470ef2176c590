-- A closed month's bronze indexes rebuilt once (BENCHMARKS.md "Issue 30, round ten"; src/db/sql/retention/compactPartitions.ts).
-- A btree that inserts fill in landing order is about half full wherever keys arrive out of their own order (the
-- event-id index on the peers workload: 38 bytes per event against 22.5 freshly built). A month's partition of bronze
-- takes no landing once its month is over (rows go to the partition of their landed_at, the landing's time), so
-- `straggler compact` rebuilds its indexes once (REINDEX … CONCURRENTLY: landings and reads go on) and records it
-- here. The service does not: its retention tick must not wait on a rebuild that waits for older transactions.
-- A partition dropped and made again (an archive, then a restore) has another oid: it is rebuilt again.
CREATE TABLE straggler.bronze_compactions (
	"partition" text PRIMARY KEY,
	"relid" oid NOT NULL,
	"compacted_at" timestamptz NOT NULL DEFAULT now(),
	"index_bytes_before" bigint NOT NULL,
	"index_bytes_after" bigint NOT NULL
);
