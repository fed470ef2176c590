import { describe, expect, it } from "vitest";
import {
  advanceInputs,
  advanceWatermark,
  isLate,
  type InputState,
  type WatermarkSettings,
} from "../../src/core/watermark.js";
import { prng } from "../helpers/prng.js";

const MIN = 60_000; // delays are ms; instants are epoch µs (bigint)
const US_PER_MIN = 60_000_000n;

describe("advanceWatermark", () => {
  it("stays undefined (null) until a max event time exists", () => {
    expect(advanceWatermark(null, null, 10 * MIN)).toBeNull();
    expect(advanceWatermark(null, null, 0)).toBeNull();
  });

  it("is the max event time minus the delay (applied in µs) once there is one", () => {
    expect(advanceWatermark(null, 1_000_000_000n, 10 * MIN)).toBe(400_000_000n);
    expect(advanceWatermark(null, 1_000_000_001n, 0)).toBe(1_000_000_001n);
    // Before the epoch, and going below zero by the delay.
    expect(advanceWatermark(null, 100_000_000n, 10 * MIN)).toBe(-500_000_000n);
    expect(advanceWatermark(null, -1n, 1)).toBe(-1_001n);
    // A microsecond instant keeps its microseconds.
    expect(advanceWatermark(null, 30n * US_PER_MIN + 123_456n, 10 * MIN)).toBe(20n * US_PER_MIN + 123_456n);
  });

  it("is exact for year-9999 instants (epoch µs beyond 2^53)", () => {
    const max = 253_402_300_799_999_999n; // 9999-12-31T23:59:59.999999Z
    expect(advanceWatermark(null, max, 10 * MIN)).toBe(max - 10n * US_PER_MIN);
  });

  it("keeps the previous watermark when the batch has no max event time", () => {
    expect(advanceWatermark(5_000n, null, 10 * MIN)).toBe(5_000n);
  });

  it("moves forward when the candidate is later", () => {
    expect(advanceWatermark(5_000_000n, 20_000_000n, 10_000)).toBe(10_000_000n);
    expect(advanceWatermark(-5_000_000n, 0n, 1_000)).toBe(-1_000_000n);
    expect(advanceWatermark(10_000_000n, 20_000_001n, 10_000)).toBe(10_000_001n); // one µs later
  });

  it("never moves backwards", () => {
    expect(advanceWatermark(10_000_000n, 15_000_000n, 10_000)).toBe(10_000_000n); // candidate 5 s < 10 s
    expect(advanceWatermark(10_000_000n, 20_000_000n, 10_000)).toBe(10_000_000n); // candidate equal
    expect(advanceWatermark(10_000_000n, 19_999_999n, 10_000)).toBe(10_000_000n); // one µs earlier
    expect(advanceWatermark(10_000n, 0n, 0)).toBe(10_000n);
    // A larger delay on a later call cannot pull it back either.
    let wm: bigint | null = null;
    for (const [maxEvent, delay] of [
      [100_000n, 10],
      [50_000n, 0],
      [120_000n, 100],
      [95_000n, 0],
      [200_000n, 10],
    ] as const)
      wm = advanceWatermark(wm, maxEvent, delay);
    expect(wm).toBe(190_000n);
  });
});

describe("isLate (window end <= watermark)", () => {
  it("a window ending exactly at the watermark is late", () => {
    expect(isLate(600_000_000n, 600_000_000n)).toBe(true);
  });

  it("a window ending 1 µs after the watermark is not late", () => {
    expect(isLate(600_000_001n, 600_000_000n)).toBe(false);
  });

  it("a window ending before the watermark is late", () => {
    expect(isLate(0n, 600_000_000n)).toBe(true);
    expect(isLate(-600_000_000n, -1n)).toBe(true);
  });

  it("nothing is late while the watermark is undefined", () => {
    expect(isLate(0n, null)).toBe(false);
    expect(isLate(-62_135_596_800_000_000n, null)).toBe(false);
  });
});

describe("advanceInputs", () => {
  const settings = (over: Partial<WatermarkSettings> = {}): WatermarkSettings => ({
    delayMs: 10 * MIN,
    policy: "min",
    delays: new Map(),
    ...over,
  });
  const m = (minutes: number) => BigInt(minutes) * US_PER_MIN;

  it("with one input is advanceWatermark, batch after batch", () => {
    const rand = prng(7);
    let state: InputState[] = [];
    let pipelineUs: bigint | null = null,
      expected: bigint | null = null,
      maxUs: bigint | null = null;
    for (let i = 0; i < 500; i++) {
      const batchMax = rand() < 0.1 ? null : m(Math.floor(rand() * 1000));
      if (batchMax !== null && (maxUs === null || batchMax > maxUs)) maxUs = batchMax;
      expected = advanceWatermark(expected, maxUs, 10 * MIN);
      const a = advanceInputs(
        state,
        pipelineUs,
        batchMax === null ? [] : [{ input: "default", maxEventUs: batchMax, maxIngestionUs: m(i) }],
        settings({ idleTimeoutMs: MIN }),
      );
      state = a.inputs;
      pipelineUs = a.watermarkUs;
      expect(pipelineUs).toBe(expected);
    }
  });

  it("min and max of the inputs' watermarks, each with its own delay; an input without data has none", () => {
    const s = settings({
      delays: new Map([
        ["a", 5 * MIN],
        ["b", 25 * MIN],
      ]),
    });
    const batch = [
      { input: "a", maxEventUs: m(36), maxIngestionUs: m(46) },
      { input: "b", maxEventUs: m(45), maxIngestionUs: m(46) },
    ];
    expect(advanceInputs([], null, batch, s).watermarkUs).toBe(m(20));
    expect(advanceInputs([], null, batch, { ...s, policy: "max" }).watermarkUs).toBe(m(31));
    const onlyA = advanceInputs([], null, [batch[0]!], s);
    expect(onlyA.watermarkUs).toBe(m(31));
    expect(onlyA.inputs.map((i) => i.input)).toEqual(["a"]);
  });

  it("leaves out an input silent for idleTimeout or longer (ingestion time), and never goes backwards", () => {
    const before: InputState[] = [
      { input: "a", maxEventUs: m(0), watermarkUs: m(-10), lastIngestionUs: m(0) },
      { input: "b", maxEventUs: m(0), watermarkUs: m(-10), lastIngestionUs: m(0) },
    ];
    const batch = [{ input: "a", maxEventUs: m(30), maxIngestionUs: m(30) }];
    expect(advanceInputs(before, m(-10), batch, settings({ idleTimeoutMs: 30 * MIN }))).toMatchObject({
      watermarkUs: m(20),
      idle: ["b"],
      clockUs: m(30),
    });
    expect(advanceInputs(before, m(-10), batch, settings({ idleTimeoutMs: 30 * MIN + 1 }))).toMatchObject({
      watermarkUs: m(-10),
      idle: [],
    });
    expect(advanceInputs(before, m(-10), batch, settings())).toMatchObject({ watermarkUs: m(-10), idle: [] });
    // b comes back behind: the min is b's, below the pipeline's watermark, which stays.
    const idleA = advanceInputs(before, m(-10), batch, settings({ idleTimeoutMs: 30 * MIN }));
    const back = advanceInputs(
      idleA.inputs,
      idleA.watermarkUs,
      [{ input: "b", maxEventUs: m(5), maxIngestionUs: m(31) }],
      settings({ idleTimeoutMs: 30 * MIN }),
    );
    expect(back).toMatchObject({ watermarkUs: m(20), idle: [] });
    expect(back.inputs.map((i) => i.watermarkUs)).toEqual([m(20), m(-5)]);
  });
});

describe("the watermark at the edge of the supported range", () => {
  const MIN = -62_135_596_800_000_000n; // 0001-01-01T00:00:00Z, epoch µs
  it("never falls before 0001-01-01T00:00:00Z: a delay longer than the events' distance from year 1 gives that instant", () => {
    expect(advanceWatermark(null, MIN + 1_800_000_000n, 3_600_000)).toBe(MIN);
    expect(advanceWatermark(null, MIN, 0)).toBe(MIN);
    expect(advanceWatermark(MIN, MIN + 7_200_000_000n, 3_600_000)).toBe(MIN + 3_600_000_000n);
  });
});
