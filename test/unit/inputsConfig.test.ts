import { describe, expect, it } from "vitest";
import { declaredInputs, watermarkSettingsOf } from "../../src/core/pipelineSpec.js";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import { policyVersion } from "../../src/config/pipelines.js";

const base = {
  name: "orders",
  source: { format: "jsonl" },
  fields: { eventTime: "t", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
};
const parse = (watermark: unknown) => pipelineSchema.safeParse({ ...base, watermark });
const issues = (watermark: unknown) => {
  const r = parse(watermark);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("watermark inputs, policy and idleTimeout", () => {
  it("a pipeline without them keeps its policy version and one default input with the min policy", () => {
    const p = pipelineSchema.parse({ ...base, watermark: { delay: "10 minutes" } });
    expect(policyVersion(p)).toBe("4eb698e5c257ac1f");
    expect(watermarkSettingsOf(p)).toEqual({ delayMs: 600_000, policy: "min", delays: new Map() });
    expect(declaredInputs(p)).toEqual(["default"]);
  });

  it("reads per-input delays (an input without one takes watermark.delay), the policy and the idle timeout", () => {
    const p = pipelineSchema.parse({
      ...base,
      watermark: {
        delay: "10 minutes",
        policy: "max",
        idleTimeout: "15 minutes",
        inputs: { eu: { delay: "5 minutes" }, us: null, "orders.p1": {} },
      },
    });
    expect(watermarkSettingsOf(p)).toEqual({
      delayMs: 600_000,
      policy: "max",
      idleTimeoutMs: 900_000,
      delays: new Map([["eu", 300_000]]),
    });
    expect(declaredInputs(p)).toEqual(["default", "eu", "us", "orders.p1"]);
    expect(policyVersion(p)).not.toBe("4eb698e5c257ac1f");
  });

  it("refuses a bad policy, a zero idle timeout, the name default and a bad input name, each named", () => {
    expect(issues({ delay: "1 minute", policy: "avg" })).toEqual([
      'watermark.policy: expected "min" (the slowest input holds the watermark, Spark\'s default) or "max" (the fastest input sets it)',
    ]);
    expect(issues({ delay: "1 minute", idleTimeout: "0 seconds" })).toEqual([
      "watermark.idleTimeout: expected a duration greater than zero (how long an input may send nothing before it is left out of the watermark)",
    ]);
    expect(issues({ delay: "1 minute", inputs: { default: { delay: "1 minute" } } })).toEqual([
      'watermark.inputs: the input "default" is the one of rows landed without an input: its delay is watermark.delay',
    ]);
    expect(issues({ delay: "1 minute", inputs: { "-x": {} } })).toEqual([
      "watermark.inputs.-x: expected an input name of 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-', starting with a letter or digit",
    ]);
    expect(issues({ delay: "1 minute", inputs: ["eu"] })).toEqual([
      "watermark.inputs: expected a map of input names to { delay }",
    ]);
    expect(issues({ delay: "1 minute", inputs: { eu: { delay: "1 month" } } })).toEqual([
      'watermark.inputs.eu.delay: months have no fixed length: write a fixed length such as "30 days" (the input\'s watermark delay)',
    ]);
  });
});
