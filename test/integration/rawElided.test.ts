/**
 * Bronze rows written without their raw text (drizzle/0039_bronze_raw_elided.sql,
 * src/ingest/rawLayout.ts): every row's raw text read back through the views, a rebuild and an
 * archive is exactly the line as received, whichever rows kept their text; a cutover that
 * changes the columns a row's text came back from gives the row its text first.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { landFile } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-raw-elided-test-"));

const HEADER = "id,t,note,k,v";
// Each line, and whether its columns give it back (so bronze keeps no text of it).
const LINES: [string, boolean][] = [
  ["e1,2026-03-02T12:01:00.000Z,plain,k1,10.50", true],
  ["e2,2026-03-02T12:02:00.123456Z,micro,k2,-3", true], // 6 fraction digits: as formatInstant writes them
  ["e3,2026-03-02T12:03:00.000Z,,k1,0.25", true], // an empty field no column holds
  ["e4,2026-03-02T12:04:00Z,no-fraction,k1,1", false], // the landing writes .000Z
  ["e5,2026-03-02T12:05:00.000Z,lead,k1,0448.29", false], // numeric writes 448.29
  ["e6,2026-03-02T12:06:00.000Z,exp,k2,1e3", false],
  ["e7,2026-03-02T12:07:00.000Z,negzero,k2,-0.0", false],
  ['e8,2026-03-02T12:08:00.000Z,"quoted",k1,2', false],
  ["e9,2026-03-02T12:09:00.000Z,sp ace,k1,2", true],
  ["e10,2026-03-02T12:10:00.000+00:00,offset,k1,2", false],
  ["e11,2026-03-02T12:11:00.000Z,dup,k1,7", true],
  ["e11,2026-03-02T12:11:00.000Z,dup,k1,7", true], // a DUPLICATE after the landing's dedupe, still without text
  ["e12,not-a-time,bad,k1,7", false], // quarantined rows keep their text
  ["e13,0999-12-31T23:59:00.000Z,old,k1,1", false], // as formatInstant writes it, but a year before 1000 (to_char writes those otherwise)
];

const base = (name: string, key: string) => ({
  name,
  source: { landingDir: dir, format: "csv" },
  fields: { eventId: "id", eventTime: "t", groupKey: [key], value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
});

describe("bronze rows kept without their raw text", () => {
  it("the views, the rebuild and a cutover that changes the key give every line back exactly; only the rows whose columns give them back have no text", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "a.csv");
    writeFileSync(file, [HEADER, ...LINES.map(([l]) => l)].join("\n") + "\n");
    const live = pipeline(base("raw-elided", "k"));
    const r = await landFile(pool, live, file, "a.csv");
    expect([r.landed, r.accepted, r.byReason]).toEqual([14, 12, { PARSE_FAIL: 1, DUPLICATE: 1 }]);

    const stored = await pool.query(
      "SELECT raw IS NULL AS elided, raw_rest FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq",
      [live.name],
    );
    expect(stored.rows.map((x) => x.elided)).toEqual(LINES.map(([, e]) => e));
    expect(stored.rows.filter((x) => x.elided).map((x) => x.raw_rest)).toEqual([
      "plain",
      "micro",
      "",
      "sp ace",
      "dup",
      "dup",
    ]);
    expect(
      (await pool.query("SELECT raw_layout FROM straggler.source_headers WHERE pipeline = $1", [live.name])).rows,
    ).toEqual([{ raw_layout: "etxkv" }]);
    const viewRaw = async () =>
      (await pool.query("SELECT raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [live.name])).rows.map(
        (x) => x.raw,
      );
    expect(await viewRaw()).toEqual(LINES.map(([l]) => l));
    expect(
      (await pool.query("SELECT raw FROM straggler.quarantine WHERE pipeline = $1 ORDER BY seq", [live.name])).rows.map(
        (x) => x.raw,
      ),
    ).toEqual([LINES[11]![0], LINES[12]![0]]);
    while ((await runBatch(pool, live, "once")) !== null);

    // Rebuilt with the note as the key: the rebuild reads every line back; the cutover changes the key
    // of the accepted rows, so the rows without text get it first.
    const rekeyed = pipeline(base("raw-elided", "note"));
    const built = await rebuild(pool, rekeyed);
    expect(built.rowsClassified).toBe(14);
    await cutover(pool, rekeyed, built.version);
    expect(await viewRaw()).toEqual(LINES.map(([l]) => l));
    const after = await pool.query(
      "SELECT raw IS NULL AS elided, group_key FROM straggler.bronze_events WHERE pipeline = $1 AND status = 'accepted' ORDER BY seq",
      [live.name],
    );
    expect(after.rows.every((x) => x.elided === false)).toBe(true);
    expect(after.rows.map((x) => x.group_key).slice(0, 3)).toEqual(["plain", "micro", "\uffff"]);
  });

  it("a source's text is never changed in place: the raw columns' trigger refuses a text that is not the one the columns give back", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "b.csv");
    writeFileSync(file, `${HEADER}\ne1,2026-03-02T12:01:00.000Z,plain,k1,10.50\n`);
    const p = pipeline(base("raw-elided-trigger", "k"));
    await landFile(pool, p, file, "b.csv");
    await expect(
      pool.query("UPDATE straggler.bronze_events SET raw = 'something else' WHERE pipeline = $1", [p.name]),
    ).rejects.toThrow(/the raw columns .* never change/);
    await expect(
      pool.query("UPDATE straggler.bronze_events SET raw_rest = 'other' WHERE pipeline = $1", [p.name]),
    ).rejects.toThrow(/the raw columns .* never change/);
    await pool.query(
      "UPDATE straggler.bronze_events SET raw = 'e1,2026-03-02T12:01:00.000Z,plain,k1,10.50' WHERE pipeline = $1",
      [p.name],
    );
    expect((await pool.query("SELECT raw FROM straggler.bronze_events WHERE pipeline = $1", [p.name])).rows).toEqual([
      { raw: "e1,2026-03-02T12:01:00.000Z,plain,k1,10.50" },
    ]);
  });

  it("a field no column holds that is an instant is kept as one (raw_at) only when its text comes back character for character", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "c.csv");
    // The arrival field's text, and whether the row goes without its text (its arrival then in raw_at).
    const ARRIVALS: [string, boolean][] = [
      ["2026-03-02T12:30:00.000Z", true],
      ["2026-03-02T12:31:00.123456Z", true],
      ["2026-03-02T12:32:00.123000Z", false], // 6 digits ending 000: instant_text writes .123Z
      ["2028-02-29T00:00:00.000Z", true], // a leap day
      ["2000-02-29T00:00:00.000Z", true], // leap by the 400-year rule
      ["1900-02-29T00:00:00.000Z", false], // no such day: PostgreSQL would refuse it
      ["2026-02-29T00:00:00.000Z", false],
      ["2026-04-31T00:00:00.000Z", false],
      ["2026-13-01T00:00:00.000Z", false],
      ["2026-03-00T00:00:00.000Z", false],
      ["2026-03-02T24:00:00.000Z", false], // PostgreSQL reads it as the next day's midnight
      ["2026-03-02T12:60:00.000Z", false],
      ["2026-03-02T12:00:60.000Z", false], // a leap second: read as the next minute
      ["2026-03-02T12:33:00Z", false], // no fraction
      ["2026-03-02T12:34:00.000z", false],
      ["2026-03-02T12:35:00.000+00:00", false],
      ["0999-12-31T23:59:59.999Z", false], // to_char writes a year before 1000 otherwise
      ["1000-01-01T00:00:00.000Z", true],
      ["9999-12-31T23:59:59.999999Z", true],
      ["", false],
    ];
    const lines = ARRIVALS.map(
      ([a], i) => `e${i},2026-03-02T12:${String(i).padStart(2, "0")}:00.000Z,${a},n${i},k1,${i}`,
    );
    writeFileSync(file, ["id,t,arrived,note,k,v", ...lines].join("\n") + "\n");
    const p = pipeline(base("raw-elided-instant", "k"));
    const r = await landFile(pool, p, file, "c.csv");
    expect([r.landed, r.accepted]).toEqual([20, 20]);
    expect(
      (await pool.query("SELECT raw_layout FROM straggler.source_headers WHERE pipeline = $1", [p.name])).rows,
    ).toEqual([{ raw_layout: "etaxkv" }]);
    const stored = await pool.query(
      "SELECT raw IS NULL AS elided, raw_rest, raw_at FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq",
      [p.name],
    );
    expect(stored.rows.map((x) => x.elided)).toEqual(ARRIVALS.map(([, e]) => e));
    expect(stored.rows.map((x) => [x.raw_rest, x.raw_at])).toEqual(
      ARRIVALS.map(([a, e], i) => (e ? [`n${i}`, a] : [null, null])),
    );
    const raws = async () =>
      (await pool.query("SELECT raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [p.name])).rows.map(
        (x) => x.raw,
      );
    expect(await raws()).toEqual(lines);
    // A rebuild reads every line back through the same function, and classifies them all again.
    expect((await rebuild(pool, p)).rowsClassified).toBe(20);
    await expect(
      pool.query("UPDATE straggler.bronze_events SET raw_at = raw_at + interval '1 ms' WHERE pipeline = $1", [p.name]),
    ).rejects.toThrow(/the raw columns \(.*raw_at.*\) never change/);
    expect(await raws()).toEqual(lines);
  });
  it("an instant field whose text is the event time's keeps no instant (raw_at NULL), and a cutover that moves the event time gives the row its text first", async () => {
    const { pool } = await getDb();
    const file = path.join(dir, "d.csv");
    // The line, whether bronze keeps no text of it, and whether its arrival is kept in raw_at.
    const ROWS: [string, boolean, boolean][] = [
      ["e1,2026-03-02T12:01:00.000Z,2026-03-02T12:01:00.000Z,k1,1", true, false], // arrived on time: its event time
      ["e2,2026-03-02T12:02:00.000Z,2026-03-02T13:02:00.000Z,k1,2", true, true], // arrived late: an instant of its own
      ["e3,2026-03-02T12:03:00.123456Z,2026-03-02T12:03:00.123456Z,k1,3", true, false],
      ["e4,2026-03-02T12:04:00Z,2026-03-02T12:04:00Z,k1,4", false, false], // the landing writes .000Z: neither comes back
      ["e5,2026-03-02T12:05:00.000Z,2026-03-02T12:05:00.000+00:00,k1,5", false, false], // the same instant, other text
      ["e6,2026-03-02T12:06:00.000Z,,k1,6", false, false],
    ];
    const lines = ROWS.map(([l]) => l);
    writeFileSync(file, ["id,t,arrived,k,v", ...lines].join("\n") + "\n");
    const p = pipeline(base("raw-elided-at-event-time", "k"));
    expect((await landFile(pool, p, file, "d.csv")).accepted).toBe(6);
    expect(
      (await pool.query("SELECT raw_layout FROM straggler.source_headers WHERE pipeline = $1", [p.name])).rows,
    ).toEqual([{ raw_layout: "etakv" }]);
    const stored = async () =>
      (
        await pool.query(
          "SELECT raw IS NULL AS elided, raw_at IS NOT NULL AS has_at FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq",
          [p.name],
        )
      ).rows.map((x) => [x.elided, x.has_at]);
    expect(await stored()).toEqual(ROWS.map(([, e, a]) => [e, a]));
    const raws = async () =>
      (await pool.query("SELECT raw FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq", [p.name])).rows.map(
        (x) => x.raw,
      );
    expect(await raws()).toEqual(lines);
    while ((await runBatch(pool, p, "once")) !== null);

    // Rebuilt with the arrival as the event time: e2's event time moves (it gets its text first); e1's and e3's
    // do not (still without text, raw_at still NULL: their arrival is their event time under either policy).
    const byArrival = pipeline({
      ...base("raw-elided-at-event-time", "k"),
      fields: { ...base("", "k").fields, eventTime: "arrived" },
    });
    const built = await rebuild(pool, byArrival);
    expect(built.rowsClassified).toBe(6);
    await cutover(pool, byArrival, built.version);
    expect(await raws()).toEqual(lines);
    expect((await stored()).slice(0, 3)).toEqual([
      [true, false],
      [false, true],
      [true, false],
    ]);
  });
});

describe("straggler.raw_of_layout as PL/pgSQL (drizzle/0052)", () => {
  it("gives what the SQL statement it replaced (0047) gives, on every layout letter, NULL part, empty or missing x field and unknown letter", async () => {
    const { pool } = await getDb();
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      // 0047's definition, under another name for the length of this transaction.
      await client.query(`CREATE FUNCTION pg_temp.raw_of_layout_sql(layout text, rest text, at timestamptz, event_id text, event_time timestamptz, ingestion_time timestamptz, group_key text, value numeric)
RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN bool_and(p IS NOT NULL) THEN string_agg(p, ',' ORDER BY o) END
    FROM (SELECT o, CASE c WHEN 'e' THEN event_id
                           WHEN 't' THEN straggler.instant_text(event_time)
                           WHEN 'i' THEN straggler.instant_text(ingestion_time)
                           WHEN 'a' THEN straggler.instant_text(coalesce(at, event_time))
                           WHEN 'k' THEN group_key
                           WHEN 'v' THEN value::text
                           WHEN 'x' THEN CASE WHEN rest = '' THEN '' ELSE (string_to_array(rest, ','))[xn] END END AS p
            FROM (SELECT c, o, sum((c = 'x')::int) OVER (ORDER BY o) AS xn
                    FROM unnest(string_to_array(layout, NULL)) WITH ORDINALITY AS l(c, o)) letters) parts
$$`);
      const { rows } = await client.query(`
        WITH layouts(layout) AS (VALUES ('etkv'), ('etxkv'), ('xetakv'), ('etxxkvx'), ('x'), ('xx'), ('a'), ('ik'), ('etq'), (''), (NULL)),
             rests(rest) AS (VALUES ('note'), (''), ('a,b'), ('a,,c'), (NULL)),
             ats(at) AS (VALUES ('2026-03-02T12:01:00.5Z'::timestamptz), (NULL)),
             cols(event_id, event_time, value) AS (VALUES ('e1', '2026-03-02T12:00:00.123456Z'::timestamptz, 10.50::numeric),
                                                        ('e2', '2026-03-02T12:00:00Z', NULL), (NULL, NULL, -3))
        SELECT layout, rest, at, event_id, event_time, value,
               straggler.raw_of_layout(layout, rest, at, event_id, event_time, '2026-03-02T13:00:00Z', 'k1', value) AS plpgsql,
               pg_temp.raw_of_layout_sql(layout, rest, at, event_id, event_time, '2026-03-02T13:00:00Z', 'k1', value) AS sql
          FROM layouts, rests, ats, cols`);
      expect(rows.length).toBe(11 * 5 * 2 * 3);
      expect(rows.filter((r) => r.plpgsql !== r.sql)).toEqual([]);
      // The grid reaches both outcomes: 127 texts, the other 203 NULL (a part missing), as 0047 gives them.
      expect(rows.filter((r) => r.sql !== null).length).toBe(127);
      expect(
        rows.find((r) => r.layout === "etxxkvx" && r.rest === "a,,c" && r.at !== null && r.event_id === "e1")?.plpgsql,
      ).toBe("e1,2026-03-02T12:00:00.123456Z,a,,k1,10.50,c");
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
  });
});
