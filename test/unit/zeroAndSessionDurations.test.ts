/**
 * Durations that must be greater than zero, written as a bare 0, are refused as zero (not with
 * the unit hint, whose "0 seconds" would be refused next); a month or year as a session gap is
 * refused without the calendar-window advice (a session window takes no window.timeZone).
 */
import { describe, expect, it } from "vitest";
import { formatIssues } from "../../src/config/pipelines.js";
import { pipelinesFileSchema } from "../../src/config/pipelineSchema.js";

const base = (over: Record<string, unknown>) => ({
  name: "p",
  source: { format: "jsonl" },
  fields: { eventTime: "t", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "5 minutes" },
  ...over,
});

function issues(p: Record<string, unknown>): string {
  const parsed = pipelinesFileSchema.safeParse({ pipelines: [p] });
  if (parsed.success) throw new Error("expected the config to be refused");
  return formatIssues(parsed.error);
}

describe("zero where a positive duration is expected", () => {
  it("names a bare 0 as zero for a session gap, a window size and slide, idleTimeout and the trigger interval", () => {
    expect(issues(base({ window: { type: "session", gap: 0 } }))).toBe(
      "  pipelines[0].window.gap: expected a duration greater than zero (session gap)",
    );
    expect(issues(base({ window: { type: "tumbling", size: 0 } }))).toBe(
      "  pipelines[0].window.size: expected a duration greater than zero (window size)",
    );
    expect(issues(base({ window: { type: "sliding", size: "10 minutes", slide: 0 } }))).toBe(
      "  pipelines[0].window.slide: expected a duration greater than zero (window slide)",
    );
    expect(issues(base({ watermark: { delay: "5 minutes", idleTimeout: 0 } }))).toBe(
      "  pipelines[0].watermark.idleTimeout: expected a duration greater than zero (how long an input may send nothing before it is left out of the watermark)",
    );
    expect(issues(base({ trigger: { interval: 0 } }))).toBe(
      "  pipelines[0].trigger.interval: expected a duration greater than zero (trigger interval)",
    );
  });

  it('names "0 seconds" the same way, and keeps the unit hint for another bare number', () => {
    expect(issues(base({ window: { type: "session", gap: "0 seconds" } }))).toBe(
      "  pipelines[0].window.gap: expected a duration greater than zero (session gap)",
    );
    expect(issues(base({ watermark: { delay: "5 minutes", idleTimeout: "0 seconds" } }))).toBe(
      "  pipelines[0].watermark.idleTimeout: expected a duration greater than zero (how long an input may send nothing before it is left out of the watermark)",
    );
    expect(issues(base({ window: { type: "session", gap: 600 } }))).toBe(
      '  pipelines[0].window.gap: a number without a unit: write "600 seconds" (or minutes, hours, ...) (session gap)',
    );
  });

  it("still takes a watermark delay of 0 written with a unit", () => {
    const parsed = pipelinesFileSchema.parse({ pipelines: [base({ watermark: { delay: "0 seconds" } })] });
    expect(parsed.pipelines[0]!.watermark.delay).toBe(0);
  });
});

describe("a month or a year as a session gap", () => {
  it("is refused with a fixed length to write, not the calendar window's time zone", () => {
    expect(issues(base({ window: { type: "session", gap: "1 month" } }))).toBe(
      '  pipelines[0].window.gap: months have no fixed length: write a fixed length such as "30 days" (session gap)',
    );
    expect(issues(base({ window: { type: "session", gap: "1 year" } }))).toBe(
      '  pipelines[0].window.gap: years have no fixed length: write a fixed length such as "365 days" (session gap)',
    );
  });

  it("keeps the calendar advice for a tumbling window's size", () => {
    expect(issues(base({ window: { type: "tumbling", size: "1 month" } }))).toBe(
      '  pipelines[0].window.size: months have no fixed length: for calendar months give the window a time zone (window.timeZone, e.g. "America/New_York"), or write a fixed length such as "30 days" (window size)',
    );
  });
});

describe("a duration longer than 365000 days", () => {
  it("is refused where it is read, naming the bound; 365000 days is taken", () => {
    expect(issues(base({ watermark: { delay: "14000000 weeks" } }))).toBe(
      '  pipelines[0].watermark.delay: duration too long: "14000000 weeks" (at most 365000 days: an event time this far back or ahead is outside PostgreSQL\'s timestamps) (watermark delay)',
    );
    expect(issues(base({ window: { type: "session", gap: "365001 days" } }))).toBe(
      '  pipelines[0].window.gap: duration too long: "365001 days" (at most 365000 days: an event time this far back or ahead is outside PostgreSQL\'s timestamps) (session gap)',
    );
    expect(
      pipelinesFileSchema.parse({ pipelines: [base({ watermark: { delay: "365000 days" } })] }).pipelines[0]!.watermark
        .delay,
    ).toBe(31_536_000_000_000);
  });
});
