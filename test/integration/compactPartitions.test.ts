/**
 * Bronze's closed months compacted (src/db/sql/retention/compactPartitions.ts, drizzle/0046): a past month's
 * partition whose event-id index inserts left half full is rebuilt once, smaller, with every row kept and its
 * indexes valid; this month's partition is not touched; a second run rebuilds nothing; a partition dropped and
 * made again is rebuilt again.
 */
import { describe, expect, it } from "vitest";
import { compactClosedPartitions, partitionsToCompact } from "../../src/db/sql/retention/compactPartitions.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

describe("compactClosedPartitions", () => {
  it("rebuilds a closed month's indexes once: smaller, every row kept, the open months left alone", async () => {
    const { pool } = await getDb();
    // Three months before this one (UTC): its partition, filled with 20,000 rows in landing order whose event ids
    // (`c0`, `c1`, … `c19999`) arrive out of their text order, as the peers workload's do.
    const now = new Date();
    const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 3, 1));
    const day = month.toISOString().slice(0, 10);
    const name = `bronze_events_p${day.slice(0, 4)}${day.slice(5, 7)}`;
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $1::date)", [day]);
    await pool.query(
      `INSERT INTO straggler.bronze_events (source_id, pipeline, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, landed_at)
       SELECT straggler.bronze_source_id('compact', 's'), 'compact', g, 'c' || g, 'c' || g || ',1', $1::timestamptz + g * interval '1 second',
              $1::timestamptz + g * interval '1 second', 'k' || (g % 10), 1, 'accepted', $1::timestamptz + interval '1 day'
         FROM generate_series(0, 19999) g ORDER BY g`,
      [`${day}T00:00:00Z`],
    );
    const rows = async () =>
      (await pool.query(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM straggler.${name}`))
        .rows[0];
    expect(await rows()).toEqual({ n: 20_000, ids: 20_000 });

    // An interrupted rebuild's leftover: an invalid index named as REINDEX CONCURRENTLY names its new ones.
    await pool.query(
      `CREATE INDEX ${name}_event_id_high_event_id_low_idx_ccnew ON straggler.${name} (straggler.event_id_high(event_id), straggler.event_id_low(event_id))`,
    );
    await pool.query(
      `UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'straggler.${name}_event_id_high_event_id_low_idx_ccnew'::regclass`,
    );
    const indexes = async () =>
      (
        await pool.query(
          "SELECT indexrelid::regclass::text AS i FROM pg_index WHERE indrelid = $1::regclass ORDER BY 1",
          [`straggler.${name}`],
        )
      ).rows.map((r) => r.i.replace(`straggler.${name}_`, ""));
    expect(await indexes()).toEqual([
      "event_id_high_event_id_low_idx",
      "event_id_high_event_id_low_idx_ccnew",
      "event_time_idx",
      "group_key_event_time_idx",
      "pipeline_seq_idx",
    ]);

    const todo = await partitionsToCompact(pool, Date.now());
    expect(todo).toContain(name);
    // This month's and next month's partitions are open: never compacted.
    const thisMonth = `bronze_events_p${now.toISOString().slice(0, 4)}${now.toISOString().slice(5, 7)}`;
    expect(todo).not.toContain(thisMonth);

    const done = await compactClosedPartitions(pool);
    const mine = done.find((c) => c.partition === name)!;
    expect(mine.indexBytesAfter).toBeLessThan(mine.indexBytesBefore);
    expect(await rows()).toEqual({ n: 20_000, ids: 20_000 });
    const invalid = await pool.query(
      `SELECT count(*)::int AS n FROM pg_index WHERE indrelid = $1::regclass AND NOT (indisvalid AND indisready)`,
      [`straggler.${name}`],
    );
    expect(invalid.rows[0].n).toBe(0);
    expect(await indexes()).toEqual([
      "event_id_high_event_id_low_idx",
      "event_time_idx",
      "group_key_event_time_idx",
      "pipeline_seq_idx",
    ]);
    // Its btrees packed full (a closed month takes no insert); the BRIN has no fill factor.
    const options = await pool.query(
      `SELECT c.relname AS name, c.reloptions AS o FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = $1::regclass ORDER BY 1`,
      [`straggler.${name}`],
    );
    expect(options.rows.map((r) => [r.name.replace(`${name}_`, ""), r.o])).toEqual([
      ["event_id_high_event_id_low_idx", ["fillfactor=100"]],
      ["event_time_idx", null],
      ["group_key_event_time_idx", ["fillfactor=100"]],
      ["pipeline_seq_idx", ["fillfactor=100"]],
    ]);
    // The open month is not rebuilt (its btrees fill their pages as it lands, 0048: nothing to record).
    expect(done.map((c) => c.partition)).not.toContain(thisMonth);
    const open = await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_compactions WHERE partition = $1", [
      thisMonth,
    ]);
    expect(open.rows[0].n).toBe(0);
    const recorded = await pool.query(
      "SELECT index_bytes_before::bigint AS b, index_bytes_after::bigint AS a FROM straggler.bronze_compactions WHERE partition = $1",
      [name],
    );
    expect(recorded.rows).toEqual([{ b: mine.indexBytesBefore, a: mine.indexBytesAfter }]);
    // The event-id index still serves a look-up by id (its hash and the id, as every probe writes it).
    const plan = await pool.query(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM straggler.${name} WHERE straggler.event_id_high(event_id) = straggler.event_id_high('c12345') AND straggler.event_id_low(event_id) = straggler.event_id_low('c12345') AND event_id = 'c12345' AND status = 'accepted'`,
    );
    expect(JSON.stringify(plan.rows[0])).toContain(`"Index Name":"${name}_event_id_high_event_id_low_idx"`);

    // Once is enough.
    expect(await partitionsToCompact(pool, Date.now())).not.toContain(name);
    expect((await compactClosedPartitions(pool)).map((c) => c.partition)).not.toContain(name);

    // Dropped and made again (an archive, then a restore): another table, compacted again.
    await pool.query(`DROP TABLE straggler.${name}`);
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $1::date)", [day]);
    expect(await partitionsToCompact(pool, Date.now())).toContain(name);
    expect((await compactClosedPartitions(pool)).map((c) => c.partition)).toContain(name);
    expect(await partitionsToCompact(pool, Date.now())).not.toContain(name);
  });

  it("counts a month as closed only a day after it ends (a landing begun before its end may still write into it)", async () => {
    const { pool } = await getDb();
    const now = new Date();
    const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1); // the end of last month
    const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString();
    const name = `bronze_events_p${last.slice(0, 4)}${last.slice(5, 7)}`;
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $1::date)", [last.slice(0, 10)]);
    expect(await partitionsToCompact(pool, end + 86_400_000 - 1)).not.toContain(name);
    expect(await partitionsToCompact(pool, end + 86_400_000)).toContain(name);
  });
});
