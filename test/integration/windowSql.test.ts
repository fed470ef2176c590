/**
 * The SQL window assignment (`windowsLateral`) must agree exactly with the pure
 * rule (`assignWindows`) for every instant PostgreSQL may see: random instants
 * across years 0001-9999, around the epoch (negative ms), recent years, and on
 * or next to each spec's window boundaries, for tumbling and sliding specs with
 * and without start offsets. Instants are epoch microseconds: each millisecond
 * instant also comes with a microsecond neighbour, and boundaries are probed
 * one microsecond either side. Bounds are read back as exact epoch µs
 * (`extract(epoch …)` is numeric), so a microsecond of drift is a failure.
 */
import { describe, expect, it } from "vitest";
import { formatInstant, isoToUs } from "../../src/core/instants.js";
import { assignWindows, type FixedWindowSpec as WindowSpec } from "../../src/core/windows.js";
import { windowsLateral } from "../../src/db/sql/fragments/windowAssignment.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

const SEC = 1_000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const MIN_MS = Date.parse("0001-01-01T00:00:00.000Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z");
/** |ms| below which `ms * 1000` µs is exact in float8: about 285 years either side of 1970. */
const FLOAT_EXACT_MS = 2 ** 53 / 1000;

/** mulberry32: a small deterministic PRNG, so a failure always reproduces. */
function prng(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const betweenWith = (rnd: () => number) => (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

/** 200 instants (epoch ms): the whole 0001-9999 range, around 1970, recent years, whole minutes ±1 ms. */
function instants(seed: number): number[] {
  const between = betweenWith(prng(seed));
  const out: number[] = [MIN_MS, MAX_MS, -1, 0, 1];
  for (let n = 0; n < 45; n++) out.push(between(MIN_MS, MAX_MS));
  for (let n = 0; n < 50; n++) out.push(between(-2 * DAY, 2 * DAY)); // about half before 1970
  for (let n = 0; n < 40; n++) out.push(between(Date.UTC(2000, 0, 1), Date.UTC(2030, 0, 1)));
  for (let n = 0; n < 60; n++) {
    const minute = Math.floor(between(MIN_MS + MIN, MAX_MS - MIN) / MIN) * MIN;
    out.push(minute + [-1, 0, 1][n % 3]!);
  }
  return out;
}

/** Epoch µs of epoch ms. */
const us = (ms: number): bigint => BigInt(ms) * 1000n;

/** Each ms instant as µs, and beside it the same instant plus 1-999 µs (never past 9999). */
function withMicros(ms: number[]): bigint[] {
  return ms.flatMap((m, k) => (m >= MAX_MS ? [us(m)] : [us(m), us(m) + BigInt(1 + ((k * 7919) % 999))]));
}

/** 5 × `count` instants on and next to window starts of `spec` (start − 1 ms, − 1 µs, start, + 1 µs, + 1 ms) in [lo, hi], epoch µs. */
function boundaries(spec: WindowSpec, count: number, lo: number, hi: number, seed: number): bigint[] {
  const between = betweenWith(prng(seed));
  const out: bigint[] = [];
  for (let n = 0; n < count; n++) {
    const start = us(
      Math.floor((between(lo + spec.sizeMs, hi - spec.sizeMs) - spec.offsetMs) / spec.slideMs) * spec.slideMs +
        spec.offsetMs,
    );
    out.push(start - 1000n, start - 1n, start, start + 1n, start + 1000n);
  }
  return out;
}

/** Specs whose window bounds are all multiples of 4 ms (exact in SQL over 0001-9999). */
const SPECS: Record<string, WindowSpec> = {
  "tumbling 10m": { sizeMs: 10 * MIN, slideMs: 10 * MIN, offsetMs: 0 },
  "tumbling 1h offset 15m": { sizeMs: HOUR, slideMs: HOUR, offsetMs: 15 * MIN },
  "tumbling 1d offset -5h": { sizeMs: DAY, slideMs: DAY, offsetMs: -5 * HOUR },
  "tumbling 10m offset 25m (offset > size)": { sizeMs: 10 * MIN, slideMs: 10 * MIN, offsetMs: 25 * MIN },
  "tumbling 1500ms offset 4ms": { sizeMs: 1_500, slideMs: 1_500, offsetMs: 4 },
  "sliding 10m/5m": { sizeMs: 10 * MIN, slideMs: 5 * MIN, offsetMs: 0 },
  "sliding 10m/3m": { sizeMs: 10 * MIN, slideMs: 3 * MIN, offsetMs: 0 },
  "sliding 10m/3m offset -1m": { sizeMs: 10 * MIN, slideMs: 3 * MIN, offsetMs: -MIN },
  "sliding 1h/7m offset 13m": { sizeMs: HOUR, slideMs: 7 * MIN, offsetMs: 13 * MIN },
};

/**
 * Specs with bounds that are not multiples of 4 ms. A window start built as one
 * `<ms> * interval '1 millisecond'` product is a float8 multiplication, exact only within about
 * 285 years of 1970; `windowsLateral` therefore adds whole days and the remaining ms apart.
 */
const FINE_SPECS: Record<string, WindowSpec> = {
  "tumbling 7s offset 3ms": { sizeMs: 7 * SEC, slideMs: 7 * SEC, offsetMs: 3 },
  "sliding 10007ms/3001ms offset 17ms": { sizeMs: 10_007, slideMs: 3_001, offsetMs: 17 },
};

type Win = [startUs: bigint, endUs: bigint];
type Query = (text: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/** Windows per instant, as the SQL assigns them, bounds as exact epoch µs. */
async function sqlWindows(query: Query, spec: WindowSpec, events: bigint[]): Promise<Win[][]> {
  const { rows } = await query(
    `SELECT e.i::int AS i,
            (extract(epoch FROM w.window_start) * 1000000)::bigint::text AS start_us,
            (extract(epoch FROM w.window_end) * 1000000)::bigint::text AS end_us
       FROM (SELECT u.i, u.t AS event_time FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, i)) e
       ${windowsLateral(spec, "e")}
      ORDER BY e.i, w.window_start`,
    [events.map(formatInstant)],
  );
  const out: Win[][] = events.map(() => []);
  for (const r of rows) out[(r.i as number) - 1]!.push([BigInt(r.start_us as string), BigInt(r.end_us as string)]);
  return out;
}

const text = (ws: Win[] | undefined) => (ws ?? []).map(([a, b]) => `[${a},${b})`).join(" ");

/** One line per instant where SQL and `assignWindows` differ. */
function mismatches(spec: WindowSpec, events: bigint[], got: Win[][]): string[] {
  const bad: string[] = [];
  events.forEach((t, k) => {
    const expected = assignWindows(t, spec).map((w): Win => [w.startUs, w.endUs]);
    if (text(expected) !== text(got[k]))
      bad.push(`${formatInstant(t)} (${t}): sql ${text(got[k])} vs core ${text(expected)}`);
  });
  return bad;
}

describe("windowsLateral agrees with assignWindows", () => {
  const events = instants(20240501);

  it("the random instants cover the range, before and after 1970", () => {
    expect(new Set(events).size).toBe(200);
    expect(events.filter((ms) => ms < 0).length).toBeGreaterThanOrEqual(30);
    expect(events.filter((ms) => Math.abs(ms) >= FLOAT_EXACT_MS).length).toBeGreaterThanOrEqual(50);
    expect(events.every((ms) => ms >= MIN_MS && ms <= MAX_MS)).toBe(true);
  });

  Object.entries(SPECS).forEach(([name, spec], n) => {
    it(`${name}: same windows for every instant and boundary`, async () => {
      const { pool } = await getDb();
      const evts = [...withMicros(events), ...boundaries(spec, 20, MIN_MS, MAX_MS, 1000 + n)];
      const got = await sqlWindows((text, values) => pool.query(text, values), spec, evts);
      expect(mismatches(spec, evts, got)).toEqual([]);
      // Not vacuous: every instant got ceil(size/slide) windows, or one fewer but at least one.
      const perEvent = Math.ceil(spec.sizeMs / spec.slideMs);
      expect(got.filter((ws) => !(ws.length === perEvent || (ws.length === perEvent - 1 && ws.length > 0)))).toEqual(
        [],
      );
    });
  });

  Object.entries(FINE_SPECS).forEach(([name, spec], n) => {
    it(`${name}: same windows for every instant and boundary within ±285 years of 1970`, async () => {
      const { pool } = await getDb();
      const near = events.filter((ms) => Math.abs(ms) < FLOAT_EXACT_MS);
      const evts = [...withMicros(near), ...boundaries(spec, 30, -FLOAT_EXACT_MS + 1, FLOAT_EXACT_MS - 1, 2000 + n)];
      expect(evts.length).toBeGreaterThan(150);
      const got = await sqlWindows((text, values) => pool.query(text, values), spec, evts);
      expect(mismatches(spec, evts, got)).toEqual([]);
    });

    it(`${name}: same windows for every instant and boundary, far from 1970 too`, async () => {
      const { pool } = await getDb();
      const evts = [...withMicros(events), ...boundaries(spec, 30, MIN_MS, MAX_MS, 3000 + n)];
      const got = await sqlWindows((text, values) => pool.query(text, values), spec, evts);
      expect(mismatches(spec, evts, got)).toEqual([]);
    });
  });

  // With a single float product SQL computed this window's start 0.02 ms late and the event got no window.
  it("an event exactly on a window start in year 4656 gets that window", async () => {
    const { pool } = await getDb();
    const spec = FINE_SPECS["tumbling 7s offset 3ms"]!;
    const at = isoToUs("4656-05-19T23:42:21.003Z");
    expect(assignWindows(at, spec)).toEqual([{ startUs: at, endUs: at + 7_000_000n }]);
    const got = await sqlWindows((text, values) => pool.query(text, values), spec, [at, at - 1n]);
    expect(got).toEqual([[[at, at + 7_000_000n]], [[at - 7_000_000n, at]]]);
  });

  it("does not depend on the session time zone (DST days included)", async () => {
    const { pool } = await getDb();
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SET LOCAL TimeZone = 'America/New_York'");
      const dst = [
        Date.UTC(2020, 2, 8, 6, 59, 59, 999),
        Date.UTC(2020, 2, 8, 7),
        Date.UTC(2020, 10, 1, 5, 30),
        Date.UTC(2020, 10, 1, 6, 30),
      ];
      const evts = withMicros([...dst, ...events]);
      for (const spec of [SPECS["tumbling 1d offset -5h"]!, SPECS["sliding 1h/7m offset 13m"]!]) {
        const got = await sqlWindows((text, values) => client.query(text, values), spec, evts);
        expect(mismatches(spec, evts, got)).toEqual([]);
      }
      await client.query("COMMIT");
    } finally {
      client.release();
    }
  });

  it("spot check: boundaries are half-open in SQL, before 1970 too", async () => {
    const { pool } = await getDb();
    const spec = SPECS["tumbling 10m"]!;
    const evts = [
      isoToUs("2024-05-01T12:10:00.000000Z"),
      isoToUs("2024-05-01T12:09:59.999999Z"),
      isoToUs("2024-05-01T12:09:59.999Z"),
      -1n,
      -600_000_000n,
    ];
    expect(await sqlWindows((text, values) => pool.query(text, values), spec, evts)).toEqual([
      [[isoToUs("2024-05-01T12:10:00.000Z"), isoToUs("2024-05-01T12:20:00.000Z")]],
      [[isoToUs("2024-05-01T12:00:00.000Z"), isoToUs("2024-05-01T12:10:00.000Z")]],
      [[isoToUs("2024-05-01T12:00:00.000Z"), isoToUs("2024-05-01T12:10:00.000Z")]],
      [[-600_000_000n, 0n]],
      [[-600_000_000n, 0n]],
    ]);
  });

  // `new Date("0050-06-01 00:00:00+00")` is 1950 in V8: the pool's parser reads ISO text instead.
  it("window bounds read through the pool keep years 0001-0099", async () => {
    const { pool } = await getDb();
    const spec = SPECS["tumbling 10m"]!;
    const { rows } = await pool.query(
      `SELECT w.window_start, w.window_end FROM (SELECT $1::timestamptz AS event_time) e ${windowsLateral(spec, "e")}`,
      ["0050-06-01T00:05:00.000Z"],
    );
    expect(rows).toEqual([{ window_start: "0050-06-01T00:00:00.000Z", window_end: "0050-06-01T00:10:00.000Z" }]);
  });

  it("window bounds read through the pool are ISO 8601 UTC from year 0100 on", async () => {
    const { pool } = await getDb();
    const spec = SPECS["tumbling 1h offset 15m"]!;
    const { rows } = await pool.query(
      `SELECT w.window_start, w.window_end FROM (SELECT $1::timestamptz AS event_time) e ${windowsLateral(spec, "e")} ORDER BY 1`,
      ["0100-01-01T01:05:00.000Z"],
    );
    expect(rows).toEqual([{ window_start: "0100-01-01T00:15:00.000Z", window_end: "0100-01-01T01:15:00.000Z" }]);
  });

  it("refuses a spec that is not whole milliseconds before building SQL", () => {
    expect(() => windowsLateral({ sizeMs: 1.5, slideMs: 1.5, offsetMs: 0 }, "e")).toThrow(RangeError);
    expect(() => windowsLateral({ sizeMs: MIN, slideMs: MIN, offsetMs: Number.NaN }, "e")).toThrow(
      "window offset must be a whole number of ms, got NaN",
    );
  });
});
