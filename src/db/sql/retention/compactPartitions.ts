/**
 * Bronze's closed months compacted (drizzle/0046_bronze_compactions.sql): each monthly partition whose
 * month ended more than `CLOSED_AFTER_MS` ago gets its btree indexes set to `fillfactor = 100` (a closed month
 * takes no landing: no room is left for inserts) and every index rebuilt once with `REINDEX TABLE … CONCURRENTLY`
 * (PostgreSQL 12+: no lock that stops landings or reads), recorded in `straggler.bronze_compactions` with its
 * index bytes before and after. Run by `straggler compact` (a monthly cron job suffices); not by the service, whose
 * retention tick must not wait on a rebuild that waits for every older transaction to end. A btree filled in landing order is about half full where its keys arrive out of
 * their order (bronze's event-id index: 38 B per event on the peers workload, 22.5 B rebuilt); rows land only in
 * the partition of their landing's month, so a closed month's indexes only shrink back by a rebuild.
 */
import type { Queryable } from "../../pool.js";
import { quoteIdent } from "./archives.js";
import { listPartitions } from "./partitions.js";

/**
 * How long after its month's end a partition counts as closed, ms: a landing's `landed_at` is its transaction's
 * start, so one that began before the month ended may still write into it for a while.
 */
const CLOSED_AFTER_MS = 86_400_000;

/** One partition compacted: its name and the bytes of its indexes before and after, and the time it took (ms). */
export interface Compaction {
  partition: string;
  indexBytesBefore: number;
  indexBytesAfter: number;
  ms: number;
}

/** The invalid indexes an interrupted `REINDEX … CONCURRENTLY` of table $1 left behind. */
const LEFT_BEHIND_SQL = `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = $1::regclass AND NOT i.indisvalid AND c.relname ~ '_ccnew[0-9]*$'`;

const INDEX_BYTES_SQL = `SELECT coalesce(sum(pg_relation_size(indexrelid)), 0)::bigint AS b FROM pg_index WHERE indrelid = $1::regclass`;

/**
 * The closed partitions of bronze not compacted yet (by name and oid: one made again since is not), oldest first.
 * @param nowMs the current time, epoch ms
 */
export async function partitionsToCompact(db: Queryable, nowMs: number): Promise<string[]> {
  // Compacted: recorded with the oid the table of that name has now (one made again since has another).
  const { rows } = await db.query(
    `SELECT c.partition FROM straggler.bronze_compactions c JOIN pg_class p ON p.oid = c.relid AND p.relname = c.partition`,
  );
  const done = new Set(rows.map((r) => r.partition as string));
  return (await listPartitions(db))
    .filter((p) => p.rangeEnd !== null && Date.parse(p.rangeEnd) + CLOSED_AFTER_MS <= nowMs && !done.has(p.name))
    .map((p) => p.name)
    .sort();
}

/**
 * Compacts every closed partition not compacted yet (`partitionsToCompact`), one at a time, each recorded once done.
 * `db` must not be in a transaction (REINDEX CONCURRENTLY cannot run in one): a pool or a client outside one.
 * @param nowMs the current time, epoch ms
 * @returns the partitions compacted, oldest first
 * @throws the database's error (an interrupted rebuild leaves the old indexes in use; the next call rebuilds it again)
 */
export async function compactClosedPartitions(db: Queryable, nowMs = Date.now()): Promise<Compaction[]> {
  const done: Compaction[] = [];
  for (const partition of await partitionsToCompact(db, nowMs)) {
    const table = `straggler.${partition}`;
    const started = Date.now();
    // An earlier rebuild that was interrupted left its new indexes behind, invalid (`…_ccnew`): PostgreSQL's
    // advice is to drop them and rebuild again.
    for (const r of (await db.query(LEFT_BEHIND_SQL, [table])).rows)
      await db.query(`DROP INDEX CONCURRENTLY straggler.${quoteIdent(r.name as string)}`);
    const before = Number((await db.query(INDEX_BYTES_SQL, [table])).rows[0].b);
    // Full leaf pages (the default, 90, keeps a tenth free for inserts that a closed month never gets, as the
    // correction and event-id indexes' 97 does for the late events of an open month, drizzle/0050): on the peers workload
    // 113.7 → 94.9 B per event rebuilt at 90, 85.7 at 100 (BENCHMARKS.md "Issue 30, round ten").
    await db.query("SELECT straggler.fill_bronze_indexes($1::regclass, 100)", [table]);
    await db.query(`REINDEX TABLE CONCURRENTLY straggler.${quoteIdent(partition)}`);
    const after = Number((await db.query(INDEX_BYTES_SQL, [table])).rows[0].b);
    await db.query(
      `INSERT INTO straggler.bronze_compactions (partition, relid, index_bytes_before, index_bytes_after)
       VALUES ($1, $2::regclass, $3, $4)
       ON CONFLICT (partition) DO UPDATE SET relid = EXCLUDED.relid, compacted_at = now(),
         index_bytes_before = EXCLUDED.index_bytes_before, index_bytes_after = EXCLUDED.index_bytes_after`,
      [partition, table, before, after],
    );
    done.push({ partition, indexBytesBefore: before, indexBytesAfter: after, ms: Date.now() - started });
  }
  return done;
}
