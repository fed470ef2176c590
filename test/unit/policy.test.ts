import { describe, expect, it } from "vitest";
import { canonicalPolicy, diffPolicies, policyOf } from "../../src/config/policy.js";
import { policyVersion } from "../../src/config/pipelines.js";
import { pipeline } from "../helpers/fixtures.js";

const raw = {
  name: "orders",
  source: { landingDir: "in", format: "csv" },
  fields: { eventTime: "ts", value: "amount" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "5 minutes" },
};
const texts = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  diffPolicies(policyOf(pipeline(a)), policyOf(pipeline(b))).map((c) => c.text);

describe("policy of a pipeline", () => {
  it("is the fields, timestamps, window, watermark and admission blocks, canonical JSON with sorted keys", () => {
    expect(canonicalPolicy(policyOf(pipeline(raw)))).toBe(
      '{"admission":{"dedupe":true,"maxAbsValue":"1e38","maxFractionDigits":18,"maxFutureSkew":3600000,"missingKey":"group"},"fields":{"eventTime":"ts","groupKey":[],"value":"amount"},' +
        '"timestamps":{"format":"iso8601"},"watermark":{"delay":300000},"window":{"offset":0,"size":600000,"type":"tumbling"}}',
    );
  });

  it("does not change with the trigger, source, replay, correction or alerts settings", () => {
    const other = {
      ...raw,
      source: { landingDir: "elsewhere", format: "csv", settle: "10 seconds" },
      trigger: { interval: "1 minute" },
      correction: { schedule: "0 * * * *" },
      alerts: { dropShare: null },
    };
    expect(policyVersion(pipeline(other))).toBe(policyVersion(pipeline(raw)));
    expect(texts(raw, other)).toEqual([]);
  });

  it("names each changed setting as path: before → after, durations, instants and unset settings written readably", () => {
    expect(
      texts(
        { ...raw, admission: { maxFutureSkew: null } },
        {
          ...raw,
          fields: { ...raw.fields, groupKey: "region" },
          timestamps: { timeZone: "UTC" },
          watermark: { delay: "1 hour 30 minutes" },
          admission: { minEventTime: "2020-01-01T00:00:00+01:00" },
        },
      ),
    ).toEqual([
      'fields.groupKey: [] → ["region"]',
      "timestamps.timeZone: (not set) → UTC",
      "watermark.delay: 5 minutes → 1 hour 30 minutes",
      "admission.maxFutureSkew: null → 1 hour",
      "admission.minEventTime: (not set) → 2019-12-31T23:00:00.000Z",
    ]);
  });

  it("counts a setting present on one side only at its default as no change (added or dropped by a newer version)", () => {
    const now = policyOf(pipeline(raw));
    const older = JSON.parse(canonicalPolicy(now)) as {
      window: Record<string, unknown>;
      admission: Record<string, unknown>;
    };
    delete older.window.offset;
    delete older.admission.missingKey;
    expect(diffPolicies(older, now)).toEqual([]);
    const offset = policyOf(pipeline({ ...raw, window: { type: "tumbling", size: "10 minutes", offset: "1 minute" } }));
    expect(diffPolicies(older, offset).map((c) => c.text)).toEqual(["window.offset: (not set) → 1 minute"]);
  });
  it("names a change between a fixed-length and a calendar window by the keys the user writes, window.size only when it reads differently", () => {
    const day = { ...raw, window: { type: "tumbling", size: "1 day" } };
    const newYork = { ...raw, window: { type: "tumbling", size: "1 day", timeZone: "America/New_York" } };
    expect(texts(day, newYork)).toEqual(["window.timeZone: (not set) → America/New_York"]);
    expect(texts(newYork, day)).toEqual(["window.timeZone: America/New_York → (not set)"]);
    expect(
      texts(
        { ...raw, window: { type: "tumbling", size: "7 days" } },
        { ...raw, window: { type: "tumbling", size: "1 week", timeZone: "UTC", weekStart: "sunday" } },
      ),
    ).toEqual([
      "window.size: 7 days → 1 week",
      "window.timeZone: (not set) → UTC",
      "window.weekStart: (not set) → sunday",
    ]);
    expect(
      texts(
        { ...raw, window: { type: "sliding", size: "2 days", slide: "1 day" } },
        { ...raw, window: { type: "sliding", size: "7 days", slide: "1 day", timeZone: "UTC" } },
      ),
    ).toEqual(["window.size: 2 days → 7 days", "window.timeZone: (not set) → UTC"]);
  });
});
