/**
 * Calendar windows in three implementations that must agree to the
 * microsecond: the pure core (`assignWindows` with a calendar spec, luxon's
 * zone offsets), the SQL fragment every stream, correction and reconcile
 * statement uses (`windowsLateral`), and PostgreSQL's own calendar arithmetic
 * (`date_trunc(unit, t AT TIME ZONE zone)` and `(local + interval) AT TIME ZONE zone`,
 * i.e. `date_trunc(unit, t, zone)` for the start).
 *
 * Probes: every instant of a DST change of America/New_York, Europe/London,
 * Australia/Lord_Howe (a 30-minute change), America/Sao_Paulo (changes at
 * midnight: the day starts at 01:00) and, for Asia/Kolkata (no change since
 * 1945), random instants, 1970–2040, each ±1 µs, plus random instants within
 * 36 hours of each change and the window bounds around it ±1 µs.
 *
 * Zones where local midnight is shown twice (Atlantic/Azores falls back from
 * 01:00 to 00:00) are where our rule differs from PostgreSQL's reading on
 * purpose: the day starts at the first midnight (PostgreSQL's reading takes the
 * second, which puts the first hour of the day in the day before). There the
 * core and the fragment must still agree, and the Azores day is checked exactly.
 */
import { IANAZone } from "luxon";
import { describe, expect, it } from "vitest";
import { formatInstant } from "../../src/core/instants.js";
import { assignWindows, type CalendarUnit, type CalendarWindowSpec } from "../../src/core/windows.js";
import { windowsLateral } from "../../src/db/sql/fragments/windowAssignment.js";
import { useTestDatabase } from "../helpers/db.js";
import { prng } from "../helpers/prng.js";

const getDb = useTestDatabase();

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const us = (ms: number) => BigInt(ms) * 1000n;

/** Instants (epoch ms) at which `zone` changes its UTC offset in [from, to): a daily scan, then bisection to the millisecond. */
function offsetChanges(zone: string, from: number, to: number): number[] {
  const z = IANAZone.create(zone);
  const out: number[] = [];
  for (let t = from; t < to; t += DAY) {
    if (z.offset(t) === z.offset(t + DAY)) continue;
    let lo = t,
      hi = t + DAY; // offset(lo) != offset(hi)
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (z.offset(mid) === z.offset(lo)) lo = mid;
      else hi = mid;
    }
    out.push(hi);
  }
  return out;
}

const FROM = Date.UTC(1970, 0, 1),
  TO = Date.UTC(2040, 0, 1);

/** Probe instants (epoch µs) for `zone`: its changes ±1 µs, 3 random instants within 36 h of each, and the day bounds there ±1 µs. */
function probes(zone: string, seed: number): bigint[] {
  const rnd = prng(seed);
  const changes = offsetChanges(zone, FROM, TO);
  const out: bigint[] = [];
  const dayOf = (t: bigint) =>
    assignWindows(t, { calendar: { unit: "day", span: 1, timeZone: zone, weekStart: 1 } })[0]!;
  for (const c of changes) {
    out.push(us(c) - 1n, us(c), us(c) + 1n);
    for (let k = 0; k < 3; k++) out.push(us(c) + BigInt(Math.floor((rnd() * 2 - 1) * 36 * HOUR * 1000)));
    const d = dayOf(us(c));
    out.push(d.startUs - 1n, d.startUs, d.endUs - 1n, d.endUs);
  }
  if (changes.length === 0)
    for (let k = 0; k < 400; k++) out.push(us(FROM) + BigInt(Math.floor(rnd() * (TO - FROM) * 1000)));
  return out;
}

type Win = [bigint, bigint];
type Query = (text: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;
const text = (ws: Win[] | undefined) =>
  (ws ?? []).map(([a, b]) => `[${formatInstant(a)},${formatInstant(b)})`).join(" ");

function collect(events: bigint[], rows: Record<string, unknown>[]): Win[][] {
  const out: Win[][] = events.map(() => []);
  for (const r of rows) out[(r.i as number) - 1]!.push([BigInt(r.s as string), BigInt(r.e as string)]);
  return out;
}

const EVENTS = `(SELECT u.i, u.t AS event_time FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, i)) e`;
const epochUs = (ts: string) => `(extract(epoch FROM ${ts}) * 1000000)::bigint::text`;

/** Windows per instant from the fragment the stream, correction and reconcile use. */
async function fragmentWindows(query: Query, spec: CalendarWindowSpec, events: bigint[]): Promise<Win[][]> {
  const { rows } = await query(
    `SELECT e.i::int AS i, ${epochUs("w.window_start")} AS s, ${epochUs("w.window_end")} AS e
       FROM ${EVENTS} ${windowsLateral(spec, "e")} ORDER BY e.i, w.window_start`,
    [events.map(formatInstant)],
  );
  return collect(events, rows);
}

const INTERVAL: Record<CalendarUnit, string> = { day: "1 day", week: "7 days", month: "1 month" };

/**
 * Windows per instant by PostgreSQL's calendar arithmetic alone: the local unit
 * start `date_trunc(unit, t AT TIME ZONE zone)` (a week from its `weekStart`),
 * moved by whole units on the wall clock and read back `AT TIME ZONE zone`.
 */
async function postgresWindows(query: Query, spec: CalendarWindowSpec, events: bigint[]): Promise<Win[][]> {
  const { unit, span, timeZone, weekStart } = spec.calendar;
  const local = "(e.event_time AT TIME ZONE $2)";
  const grid =
    unit === "week"
      ? `date_trunc('week', ${local} - ${weekStart - 1} * interval '1 day') + ${weekStart - 1} * interval '1 day'`
      : `date_trunc('${unit}', ${local})`;
  const { rows } = await query(
    `SELECT e.i::int AS i, ${epochUs("((g.l - k * interval '" + INTERVAL[unit] + "') AT TIME ZONE $2)")} AS s,
            ${epochUs("((g.l + (" + span + " - k) * interval '" + INTERVAL[unit] + "') AT TIME ZONE $2)")} AS e
       FROM ${EVENTS} CROSS JOIN LATERAL (SELECT ${grid} AS l) g, generate_series(${span - 1}, 0, -1) AS k
      ORDER BY e.i, k DESC`,
    [events.map(formatInstant), timeZone],
  );
  return collect(events, rows);
}

/** One line per instant where the three disagree (`reference` false: only core and fragment are compared). */
async function disagreements(
  query: Query,
  spec: CalendarWindowSpec,
  events: bigint[],
  reference: boolean,
): Promise<string[]> {
  const fragment = await fragmentWindows(query, spec, events);
  const pg = reference ? await postgresWindows(query, spec, events) : null;
  const bad: string[] = [];
  events.forEach((t, k) => {
    const core = text(assignWindows(t, spec).map((w): Win => [w.startUs, w.endUs]));
    const seen = [text(fragment[k]), ...(pg ? [text(pg[k])] : [])];
    if (seen.some((s) => s !== core))
      bad.push(`${formatInstant(t)}: core ${core} | fragment ${seen[0]}${pg ? ` | postgres ${seen[1]}` : ""}`);
  });
  return bad;
}

const cal = (timeZone: string, unit: CalendarUnit, span = 1, weekStart = 1): CalendarWindowSpec => ({
  calendar: { unit, span, timeZone, weekStart },
});

const SHAPES: [string, (zone: string) => CalendarWindowSpec][] = [
  ["1 day", (z) => cal(z, "day")],
  ["1 week (Monday)", (z) => cal(z, "week")],
  ["1 week (Sunday)", (z) => cal(z, "week", 1, 7)],
  ["1 month", (z) => cal(z, "month")],
  ["7 days sliding by 1 day", (z) => cal(z, "day", 7)],
  ["3 months sliding by 1 month", (z) => cal(z, "month", 3)],
];

const ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kolkata"];

describe("calendar windows: core, SQL fragment and PostgreSQL's date_trunc agree around every DST change, 1970-2040", () => {
  it("finds the DST changes to probe (the scan is not vacuous)", () => {
    expect(offsetChanges("America/New_York", FROM, TO).length).toBe(140);
    expect(
      offsetChanges("America/Sao_Paulo", FROM, TO)
        .map((c) => formatInstant(us(c)))
        .slice(-2),
    ).toEqual(["2018-11-04T03:00:00.000Z", "2019-02-17T02:00:00.000Z"]);
    expect(offsetChanges("Asia/Kolkata", FROM, TO)).toEqual([]);
  });

  for (const zone of ZONES) {
    it(`${zone}: every shape`, { timeout: 60_000 }, async () => {
      const { pool } = await getDb();
      const query: Query = (t, v) => pool.query(t, v);
      const events = probes(zone, zone.length * 7919);
      for (const [name, shape] of SHAPES) {
        expect(await disagreements(query, shape(zone), events, true), `${zone} ${name}`).toEqual([]);
      }
    });
  }

  it("the spring day is 23 hours, the autumn day 25; Sao Paulo's spring day starts at 01:00; Lord Howe's change is 30 minutes", async () => {
    const day = (zone: string, iso: string) => {
      const [w] = assignWindows(us(Date.parse(iso)), cal(zone, "day"));
      return `${formatInstant(w!.startUs)} ${Number(w!.endUs - w!.startUs) / 3_600_000_000}h`;
    };
    expect(day("America/New_York", "2024-03-10T12:00:00Z")).toBe("2024-03-10T05:00:00.000Z 23h");
    expect(day("America/New_York", "2024-11-03T12:00:00Z")).toBe("2024-11-03T04:00:00.000Z 25h");
    expect(day("Europe/London", "2024-03-31T12:00:00Z")).toBe("2024-03-31T00:00:00.000Z 23h");
    expect(day("Europe/London", "2024-10-27T12:00:00Z")).toBe("2024-10-26T23:00:00.000Z 25h");
    expect(day("America/Sao_Paulo", "2018-11-04T12:00:00Z")).toBe("2018-11-04T03:00:00.000Z 23h"); // 00:00 does not exist: 01:00 -02
    expect(day("America/Sao_Paulo", "2019-02-16T12:00:00Z")).toBe("2019-02-16T02:00:00.000Z 25h"); // 23:00-24:00 twice
    expect(day("Australia/Lord_Howe", "2024-04-07T12:00:00Z")).toBe("2024-04-06T13:00:00.000Z 24.5h");
    expect(day("Australia/Lord_Howe", "2024-10-06T12:00:00Z")).toBe("2024-10-05T13:30:00.000Z 23.5h");
    expect(day("Asia/Kolkata", "2024-03-10T12:00:00Z")).toBe("2024-03-09T18:30:00.000Z 24h");
  });
});

describe("calendar windows where midnight is shown twice or skipped off-midnight: core and fragment agree", () => {
  const ODD_ZONES = [
    "Atlantic/Azores",
    "America/Havana",
    "America/Santiago",
    "Pacific/Apia",
    "Asia/Tehran",
    "Europe/Moscow",
  ];
  for (const zone of ODD_ZONES) {
    it(`${zone}: every shape`, { timeout: 60_000 }, async () => {
      const { pool } = await getDb();
      const query: Query = (t, v) => pool.query(t, v);
      const events = probes(zone, zone.length * 104_729);
      for (const [name, shape] of SHAPES)
        expect(await disagreements(query, shape(zone), events, false), `${zone} ${name}`).toEqual([]);
    });
  }

  it("Atlantic/Azores 2024-10-27: the day starts at the first midnight and lasts 25 hours (PostgreSQL's date_trunc reads the second)", async () => {
    const { pool } = await getDb();
    const t = us(Date.parse("2024-10-27T00:30:00Z")); // 00:30 local, the first of the two
    expect(assignWindows(t, cal("Atlantic/Azores", "day"))).toEqual([
      { startUs: us(Date.parse("2024-10-27T00:00:00Z")), endUs: us(Date.parse("2024-10-28T01:00:00Z")) },
    ]);
    expect(await fragmentWindows((q, v) => pool.query(q, v), cal("Atlantic/Azores", "day"), [t])).toEqual([
      [[us(Date.parse("2024-10-27T00:00:00Z")), us(Date.parse("2024-10-28T01:00:00Z"))]],
    ]);
    const pg = await pool.query("SELECT date_trunc('day', $1::timestamptz, 'Atlantic/Azores') AS s", [
      formatInstant(t),
    ]);
    expect(pg.rows[0].s).toBe("2024-10-27T01:00:00.000Z"); // after the event itself
  });
});
