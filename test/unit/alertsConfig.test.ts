/** The pipelines file's `alerts:` block: the README's example, the defaults, and a share out of range. */
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import { judgeAlerts } from "../../src/observe/alerts.js";

const base = {
  name: "x",
  source: { format: "jsonl" },
  fields: { eventTime: "t", value: "v" },
  timestamps: { format: "iso8601" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "1 minute" },
};

describe("alerts config", () => {
  it("reads the README's example", () => {
    const alerts = parse(`
      webhook: https://hooks.example.com/straggler
      dropShare: { above: 1%, batches: 10 }
      quarantineShare: { above: 5%, batches: 10, reason: PARSE_FAIL }
      watermarkStalled: { for: 10 minutes }
      backlog: { above: 100000 }
      correctionFailed: true
    `);
    expect(pipelineSchema.parse({ ...base, alerts }).alerts).toEqual({
      webhook: "https://hooks.example.com/straggler",
      dropShare: { above: 0.01, batches: 10 },
      quarantineShare: { above: 0.05, batches: 10, reason: "PARSE_FAIL" },
      watermarkStalled: { for: 600_000 },
      backlog: { above: 100_000 },
      correctionFailed: true,
    });
  });

  it("defaults to the drop share over 10 batches above 1 % and failed corrections, without a webhook", () => {
    expect(pipelineSchema.parse(base).alerts).toEqual({
      dropShare: { above: 0.01, batches: 10 },
      quarantineShare: null,
      watermarkStalled: null,
      backlog: null,
      correctionFailed: true,
    });
  });

  it("refuses a share over 100 % and a webhook that is no URL", () => {
    const r = pipelineSchema.safeParse({ ...base, alerts: { dropShare: { above: "150%" }, webhook: "hooks" } });
    expect(r.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["alerts.webhook", "expected an http(s) URL for the alert webhook"],
      ["alerts.dropShare.above", 'expected a drop share like 0.1% or 0.001 (from 0 to 100%), got "150%"'],
    ]);
  });

  it("judges a share strictly above its limit", () => {
    const pipeline = pipelineSchema.parse(base);
    const facts = {
      dropInputRows: 100,
      droppedPairs: 1,
      quarantineRows: 0,
      quarantinedRows: 0,
      stalledSeconds: 0,
      backlogRows: 0,
      lastRun: null,
    };
    expect(judgeAlerts(pipeline, facts).map((j) => [j.alert, j.firing, j.value])).toEqual([
      ["drop_share", false, 0.01],
      ["correction_failed", false, null],
    ]);
    expect(judgeAlerts(pipeline, { ...facts, droppedPairs: 2 })[0]!.firing).toBe(true);
  });
});
