/**
 * The read model for dashboards (migration 0035, docs/operations.md "Read model for dashboards"):
 * every view and column commented, key filters on `stored_group_key` served by an index (EXPLAIN),
 * the read-only role of `straggler db grant-reader`, and migrations that keep a user's view reading
 * a straggler view (0034 → 0035 replaces views in place; a migration that would drop one fails
 * naming it).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase, withFreshDatabase } from "../helpers/db.js";
import {
  copyMigrationsFolder,
  DependentObjectsError,
  MIGRATIONS_DIR,
  readJournalMigrations,
  runMigrations,
  runMigrationsKeeping,
} from "../../src/db/migrate.js";
import type { Pool } from "../../src/db/pool.js";

/** The newest migration's `when`, as the migrations table records it. */
const LATEST_MIGRATION = String(readJournalMigrations(MIGRATIONS_DIR).at(-1)!.folderMillis);

const getDb = useTestDatabase();

/** The views of schema `straggler`, sorted. */
const VIEWS = [
  "amendments",
  "archived_rows",
  "bronze",
  "correction_audit",
  "correction_history",
  "failed_windows",
  "holds",
  "ledger",
  "quarantine",
  "rebuild_diff",
  "rebuild_reclassified",
  "results_versions",
  "retractions",
  "sources",
  "stream_progress",
  "window_results",
  "window_results_by_version",
  "windows_awaiting_correction",
];
/** The views that show a group key, and so the stored one beside it. */
const KEYED = [
  "correction_audit",
  "failed_windows",
  "rebuild_diff",
  "retractions",
  "window_results",
  "window_results_by_version",
  "windows_awaiting_correction",
];

const COMMENTS_SQL = `SELECT c.relname AS view, a.attname AS column, col_description(c.oid, a.attnum) AS comment
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = 'straggler' AND c.relkind = 'v' ORDER BY 1, a.attnum`;

/** The plan of `sql` (EXPLAIN, text format), one string. */
async function plan(pool: Pool, sql: string): Promise<string> {
  return (await pool.query(`EXPLAIN (COSTS OFF) ${sql}`)).rows
    .map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"])
    .join("\n");
}

describe("COMMENT ON the read model", () => {
  it("every view and every column has a comment", async () => {
    const { pool } = await getDb();
    const views = await pool.query(
      "SELECT c.relname AS view, obj_description(c.oid, 'pg_class') AS comment FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'straggler' AND c.relkind = 'v' ORDER BY 1",
    );
    expect(views.rows.map((r) => r.view)).toEqual(VIEWS);
    expect(views.rows.filter((r) => r.comment === null).map((r) => r.view)).toEqual([]);
    const columns = (await pool.query(COMMENTS_SQL)).rows as { view: string; column: string; comment: string | null }[];
    expect(columns.filter((c) => c.comment === null).map((c) => `${c.view}.${c.column}`)).toEqual([]);
    expect(columns.length).toBe(234);
    const comment = (view: string, column: string) =>
      columns.find((c) => c.view === view && c.column === column)?.comment;
    expect(views.rows.find((r) => r.view === "window_results").comment).toBe(
      "Gold: one row per window and group key of each pipeline, the current aggregates with their status; while the pipeline is held, what was published when the hold began",
    );
    expect(comment("window_results", "status")).toBe(
      "open (the watermark has not passed the window end: may still change), final (passed: changes only by a correction), corrected (changed by a correction run)",
    );
    expect(comment("window_results", "group_key")).toBe(
      "the group key (one key field: its text; several: the JSON array of their values; none: the empty string); NULL is the null group",
    );
    expect(comment("bronze", "status")).toBe("accepted or quarantined");
    const fn = await pool.query("SELECT obj_description('straggler.key_in(text)'::regprocedure, 'pg_proc') AS c");
    expect(fn.rows[0].c).toBe(
      "A group key as shown (NULL = the null group) to its stored text, for filters on stored_group_key that use the index: WHERE stored_group_key = straggler.key_in('JFK')",
    );
  });

  it("every view that shows group_key shows stored_group_key as its last column", async () => {
    const { pool } = await getDb();
    const last = await pool.query(
      `SELECT table_name, column_name FROM information_schema.columns c
        WHERE table_schema = 'straggler' AND table_name IN (SELECT table_name FROM information_schema.columns WHERE table_schema = 'straggler' AND column_name = 'group_key')
          AND table_name IN (SELECT table_name FROM information_schema.views WHERE table_schema = 'straggler')
          AND ordinal_position = (SELECT max(ordinal_position) FROM information_schema.columns d WHERE d.table_schema = c.table_schema AND d.table_name = c.table_name)
        ORDER BY 1`,
    );
    // bronze keeps its definition (stored_group_key is not added there).
    expect(last.rows).toEqual(
      [
        ...KEYED.map((t) => ({ table_name: t, column_name: "stored_group_key" })),
        { table_name: "bronze", column_name: "raw" },
      ].sort((a, b) => a.table_name.localeCompare(b.table_name)),
    );
  });
});

describe("key filters on the views use an index", () => {
  it("key_in is key_out's inverse: NULL ↔ U+FFFF, every other key unchanged", async () => {
    const { pool } = await getDb();
    const r = await pool.query(
      "SELECT straggler.key_in(NULL) AS n, straggler.key_in('JFK') AS k, straggler.key_in('') AS e, straggler.key_out(straggler.key_in(NULL)) AS back",
    );
    expect(r.rows).toEqual([{ n: "\uFFFF", k: "JFK", e: "", back: null }]);
  });

  it("WHERE stored_group_key = key_in(…) on window_results is an Index Cond on the results' key index and finds the key's rows, the null group's too", async () => {
    const { pool } = await getDb();
    // 40 keys (one the null group) x 100 hourly windows, analyzed: a real choice for the planner.
    await pool.query(
      `INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count, value_sum, value_min, value_max)
       SELECT 'dash', 0, CASE WHEN k = 0 THEN U&'\\FFFF' ELSE 'k' || k END, t, t + interval '1 hour', 1, k, k, k
         FROM generate_series(0, 39) k, generate_series(timestamptz '2024-01-01T00:00:00Z', timestamptz '2024-01-05T03:00:00Z', interval '1 hour') t`,
    );
    await pool.query("ANALYZE straggler.window_results_table");
    const byStored = await plan(
      pool,
      "SELECT * FROM straggler.window_results WHERE pipeline = 'dash' AND stored_group_key = straggler.key_in('k7')",
    );
    // The pipeline has no live version: its windows are version 0's (drizzle/0051); the live version's branch reads the same index.
    expect(byStored).toContain("Bitmap Index Scan on window_results_table_pkey");
    expect(byStored).toContain(
      "Index Cond: ((pipeline = 'dash'::text) AND (version = v.version) AND (group_key = 'k7'::text))",
    );
    expect(byStored).toContain(
      "Index Cond: ((pipeline = 'dash'::text) AND (version = 0) AND (group_key = 'k7'::text))",
    );
    // The readable column wraps the key in key_out: never an index condition on group_key.
    const byShown = await plan(
      pool,
      "SELECT * FROM straggler.window_results WHERE pipeline = 'dash' AND group_key = 'k7'",
    );
    expect(byShown).not.toMatch(/Index Cond: .*group_key = 'k7'/);
    expect(byShown).toMatch(/Filter: .*straggler.key_out\(group_key\) = 'k7'::text/);

    const rows = await pool.query(
      "SELECT group_key, count(*)::int AS n, min(value_sum)::text AS v FROM straggler.window_results WHERE pipeline = 'dash' AND stored_group_key = straggler.key_in($1) GROUP BY 1",
      ["k7"],
    );
    expect(rows.rows).toEqual([{ group_key: "k7", n: 100, v: "7" }]);
    const nulls = await pool.query(
      "SELECT group_key, count(*)::int AS n FROM straggler.window_results WHERE pipeline = 'dash' AND stored_group_key = straggler.key_in($1) GROUP BY 1",
      [null],
    );
    expect(nulls.rows).toEqual([{ group_key: null, n: 100 }]);
  });

  it("each other keyed view's key filter is an Index Cond on its base table's key index", async () => {
    const { pool } = await getDb();
    const cases: [string, string, string][] = [
      ["window_results_by_version", "window_results_table_pkey", "window_results_table_pkey"],
      [
        "windows_awaiting_correction",
        "late_windows_pipeline_group_key_window_start_window_end_pk",
        "late_windows_pipeline_group_key_window_start_window_end_pk",
      ],
      ["correction_audit", "corrections_window", "corrections_window"],
      [
        "rebuild_diff",
        "rebuild_window_changes_pipeline_version_group_key_window_start_",
        "rebuild_window_changes_pipeline_version_group_key_window_start_",
      ],
      ["retractions", "session_retractions_key_start", "session_retractions_key_start"],
    ];
    for (const [view, index, otherIndex] of cases) {
      // The windows above are version 0's (no version is live): the planner weighs the key index on real rows.
      const version =
        view === "window_results_by_version" ? " AND version = 0" : view === "rebuild_diff" ? " AND version = 2" : "";
      const p = await plan(
        pool,
        `SELECT * FROM straggler.${view} WHERE pipeline = 'dash'${version} AND stored_group_key = straggler.key_in('k7')`,
      );
      for (const i of [index, otherIndex])
        expect(p, view).toMatch(new RegExp(`(Index (Only )?Scan using|Bitmap Index Scan on) ${i}`));
      expect(p, view).toMatch(/Index Cond: \(.*group_key = 'k7'::text/);
    }
  });
});

describe("straggler db grant-reader", () => {
  it("creates a NOLOGIN role that reads every view and no table, grants it to a login, and is idempotent", async () => {
    const { url, pool } = await getDb();
    const suffix = randomBytes(4).toString("hex");
    const role = `reader_${suffix}`;
    const login = `dash_${suffix}`;
    // A password of its own: the server may ask for one (SCRAM in the test containers; trust locally).
    const password = `pw_${suffix}`;
    await pool.query(`CREATE ROLE ${login} LOGIN PASSWORD '${password}'`);
    try {
      const first = await startCli(["db", "grant-reader", "--role", role, "--to", login], { DATABASE_URL: url }).done;
      expect(first).toMatchObject({
        code: 0,
        stdout: `role ${role}: created (NOLOGIN); SELECT on 18 views of schema straggler\ngranted to ${login}\n`,
        stderr: "",
      });
      const again = await startCli(["db", "grant-reader", "--role", role, "--json"], { DATABASE_URL: url }).done;
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toEqual({ role, created: false, views: VIEWS, grantedTo: [] });
      const attrs = await pool.query("SELECT rolcanlogin, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = $1", [
        role,
      ]);
      expect(attrs.rows).toEqual([{ rolcanlogin: false, rolsuper: false, rolcreaterole: false }]);

      const u = new URL(url);
      u.username = login;
      u.password = password;
      const dash = new pg.Client({ connectionString: u.toString() });
      await dash.connect();
      try {
        await pool.query(
          "INSERT INTO straggler.window_results_table (pipeline, version, group_key, window_start, window_end, event_count) VALUES ('granted', 0, 'a', '2024-01-01T00:00:00Z', '2024-01-01T01:00:00Z', 3)",
        );
        const read = await dash.query(
          "SELECT group_key, event_count::int FROM straggler.window_results WHERE pipeline = 'granted'",
        );
        expect(read.rows).toEqual([{ group_key: "a", event_count: 3 }]);
        await expect(dash.query("SELECT * FROM straggler.window_results_table")).rejects.toThrow(
          "permission denied for table window_results_table",
        );
        await expect(dash.query("DELETE FROM straggler.holds")).rejects.toThrow("permission denied for view holds");
      } finally {
        await dash.end();
      }
    } finally {
      await pool.query(`DROP OWNED BY ${role}, ${login}`).catch(() => undefined);
      await pool.query(`DROP ROLE IF EXISTS ${login}`);
      await pool.query(`DROP ROLE IF EXISTS ${role}`);
    }
  });

  it("a role to grant to that does not exist: exit 1, PostgreSQL's message, nothing created", async () => {
    const { url, pool } = await getDb();
    const role = `reader_${randomBytes(4).toString("hex")}`;
    const r = await startCli(["db", "grant-reader", "--role", role, "--to", "no_such_login_here"], {
      DATABASE_URL: url,
    }).done;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")[0]).toBe('straggler: role "no_such_login_here" does not exist');
    expect((await pool.query("SELECT count(*)::int AS n FROM pg_roles WHERE rolname = $1", [role])).rows[0].n).toBe(0);
  });
});

describe("migrations keep a user's objects", () => {
  it("a user's view reading straggler views survives migrate from 0034 to 0035 and reads the same rows", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsKeeping(pool, (idx) => idx <= 34);
      await pool.query(
        "INSERT INTO straggler.window_results_table (pipeline, group_key, window_start, window_end, event_count, value_sum) VALUES ('p', U&'\\FFFF', '2024-01-01T00:00:00Z', '2024-01-01T01:00:00Z', 2, 5), ('p', 'x', '2024-01-01T00:00:00Z', '2024-01-01T01:00:00Z', 1, 4)",
      );
      await pool.query(
        "CREATE VIEW public.my_dashboard AS SELECT group_key, event_count, value_sum, status FROM straggler.window_results WHERE pipeline = 'p'",
      );
      await pool.query(
        "CREATE VIEW public.my_late AS SELECT w.pipeline, w.group_key FROM straggler.windows_awaiting_correction w JOIN straggler.correction_audit a USING (pipeline, window_start)",
      );
      const before = (await pool.query("SELECT * FROM public.my_dashboard ORDER BY group_key NULLS FIRST")).rows;
      expect(before).toEqual([
        { group_key: null, event_count: 2, value_sum: "5", status: "open" },
        { group_key: "x", event_count: 1, value_sum: "4", status: "open" },
      ]);

      await runMigrations(pool);
      const applied = await pool.query("SELECT max(created_at)::text AS at FROM straggler.__drizzle_migrations");
      expect(applied.rows[0].at).toBe(LATEST_MIGRATION);
      expect((await pool.query("SELECT * FROM public.my_dashboard ORDER BY group_key NULLS FIRST")).rows).toEqual(
        before,
      );
      expect((await pool.query("SELECT count(*)::int AS n FROM public.my_late")).rows[0].n).toBe(0);
      const added = await pool.query(
        "SELECT stored_group_key FROM straggler.window_results WHERE pipeline = 'p' ORDER BY 1",
      );
      expect(added.rows).toEqual([{ stored_group_key: "x" }, { stored_group_key: "\uFFFF" }]);
    });
  });

  it("a migration that would drop a straggler view a user's view reads fails naming it, and changes nothing", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrations(pool);
      await pool.query("CREATE VIEW public.my_dashboard AS SELECT group_key FROM straggler.window_results");
      const folder = copyMigrationsFolder(() => true);
      try {
        const journalFile = path.join(folder, "meta", "_journal.json");
        const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: object[] };
        journal.entries.push({
          idx: 99,
          version: "7",
          when: 1796000099000,
          tag: "0099_drop_a_view",
          breakpoints: true,
        });
        writeFileSync(journalFile, JSON.stringify(journal));
        mkdirSync(folder, { recursive: true });
        writeFileSync(
          path.join(folder, "0099_drop_a_view.sql"),
          "CREATE TABLE straggler.new_table (x int);\n--> statement-breakpoint\nDROP VIEW straggler.window_results;\n",
        );
        const failure = await runMigrations(pool, { migrationsFolder: folder }).catch((e: unknown) => e);
        expect(failure).toBeInstanceOf(DependentObjectsError);
        expect((failure as Error).message).toBe(
          "a migration would drop objects that depend on straggler's (view my_dashboard depends on view straggler.window_results); nothing was changed (it was rolled back). " +
            "Drop those objects, run migrate, then create them again",
        );
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
      const left = await pool.query(
        "SELECT to_regclass('public.my_dashboard')::text AS mine, to_regclass('straggler.window_results')::text AS view, to_regclass('straggler.new_table')::text AS added",
      );
      expect(left.rows).toEqual([{ mine: "my_dashboard", view: "straggler.window_results", added: null }]);
      expect(
        (await pool.query("SELECT max(created_at)::text AS at FROM straggler.__drizzle_migrations")).rows[0].at,
      ).toBe(LATEST_MIGRATION);
    });
  });
});
