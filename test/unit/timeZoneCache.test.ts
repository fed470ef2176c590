/**
 * The wall-clock → instant conversion caches an offset per day (else per hour) where one offset holds
 * throughout (src/core/timeZones.ts). Checked against a direct computation from Luxon's offsets for every
 * 97 minutes 13 seconds of wall-clock time over two years with DST changes, in zones with 1-hour, 30-minute and
 * no DST, and every 7 s of the hours around each change of 2020 in New York (the gap and the overlap).
 */
import { DateTime } from "luxon";
import { describe, expect, it } from "vitest";
import { localToInstant } from "../../src/core/timeZones.js";

/** The earlier instant whose local time in `zone` is `wallUtcMs` (as if UTC), or null in a gap: each offset in force within 30 hours (every 3) tried. */
function oracle(wallUtcMs: number, zone: string): number | null {
  const offsets = new Set<number>();
  for (let h = -30; h <= 30; h += 3) offsets.add(DateTime.fromMillis(wallUtcMs + h * 3_600_000, { zone }).offset);
  const instants = [...offsets]
    .map((o) => wallUtcMs - o * 60_000)
    .filter((i) => DateTime.fromMillis(i, { zone }).offset * 60_000 === wallUtcMs - i);
  return instants.length === 0 ? null : Math.min(...instants);
}

describe("localToInstant with its day and hour caches", () => {
  it.each(["America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"])(
    "equals the direct computation every 5,833 s of 2020-2021 in %s",
    (zone) => {
      const from = Date.UTC(2020, 0, 1),
        to = Date.UTC(2022, 0, 1);
      let mismatches = 0,
        checked = 0;
      for (let w = from; w < to; w += 5_833_000) {
        checked++;
        if (localToInstant(w, zone) !== oracle(w, zone)) mismatches++;
      }
      expect([checked, mismatches]).toEqual([Math.ceil((to - from) / 5_833_000), 0]);
    },
  );

  it("equals it every 7 s of the hours around New York's changes of 2020, and at their edges to the ms", () => {
    const zone = "America/New_York";
    for (const change of [Date.UTC(2020, 2, 8, 2), Date.UTC(2020, 10, 1, 1)]) {
      for (let w = change - 3_600_000; w < change + 2 * 3_600_000; w += 7_000)
        expect(localToInstant(w, zone)).toBe(oracle(w, zone));
      for (const w of [change - 1, change, change + 3_599_999, change + 3_600_000])
        expect(localToInstant(w, zone)).toBe(oracle(w, zone));
    }
    // The gap has no instant; the overlap gives the earlier one (EDT).
    expect(localToInstant(Date.UTC(2020, 2, 8, 2, 30), zone)).toBeNull();
    expect(new Date(localToInstant(Date.UTC(2020, 10, 1, 1, 30), zone)!).toISOString()).toBe(
      "2020-11-01T05:30:00.000Z",
    );
  });
});
