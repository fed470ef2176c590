import { describe, expect, it } from "vitest";
import { formatIssues } from "../../src/config/pipelines.js";
import { pipelinesFileSchema } from "../../src/config/pipelineSchema.js";
import { sessionGapOf, windowSpecOf } from "../../src/core/pipelineSpec.js";
import { diffPolicies, policyOf } from "../../src/config/policy.js";
import { isLateSessionEvent, mergeTouching, sessionize, sessionsTouch } from "../../src/core/sessions.js";
import { isoToUs } from "../../src/core/instants.js";

const at = (hhmmss: string) => isoToUs(`2024-05-01T${hhmmss}Z`);
const GAP = 30 * 60_000;
const shown = (s: { startUs: bigint; endUs: bigint; events?: { id: string }[] }) =>
  `[${new Date(Number(s.startUs / 1000n)).toISOString().slice(11, 23)},${new Date(Number(s.endUs / 1000n)).toISOString().slice(11, 23)})${s.events ? " " + s.events.map((e) => e.id).join("") : ""}`;

describe("batch sessionization (src/core/sessions.ts)", () => {
  it("merges events exactly a gap apart; 1 ms beyond the gap starts a new session; order of input does not matter", () => {
    const events = [
      { id: "c", us: at("11:00:00.001") },
      { id: "a", us: at("10:00:00") },
      { id: "b", us: at("10:30:00") },
      { id: "d", us: at("11:20:00") },
    ];
    expect(sessionize(events, GAP).map(shown)).toEqual([
      "[10:00:00.000,11:00:00.000) ab",
      "[11:00:00.001,11:50:00.000) cd",
    ]);
  });

  it("an event inside a session does not move its end; the end is the latest event + gap", () => {
    const events = [
      { id: "a", us: at("10:00:00") },
      { id: "b", us: at("10:20:00") },
      { id: "c", us: at("10:05:00") },
    ];
    expect(sessionize(events, GAP).map(shown)).toEqual(["[10:00:00.000,10:50:00.000) acb"]);
  });

  it("Spark's late rule: late iff event time + gap <= watermark; nothing is late before the first watermark", () => {
    expect(isLateSessionEvent(at("10:00:00"), GAP, at("10:30:00"))).toBe(true);
    expect(isLateSessionEvent(at("10:00:00.001"), GAP, at("10:30:00"))).toBe(false);
    expect(isLateSessionEvent(at("00:00:00"), GAP, null)).toBe(false);
    expect(() => isLateSessionEvent(0n, 0, 0n)).toThrow(RangeError);
  });

  it("windows that touch merge, windows 1 µs apart do not", () => {
    const w = (s: string, e: string) => ({ startUs: at(s), endUs: at(e) });
    expect(sessionsTouch(w("10:00:00", "10:30:00"), w("10:30:00", "11:00:00"))).toBe(true);
    expect(sessionsTouch(w("10:00:00", "10:30:00"), { startUs: at("10:30:00") + 1n, endUs: at("11:00:00") })).toBe(
      false,
    );
    expect(
      mergeTouching([
        w("12:50:00", "13:20:00"),
        w("12:00:00", "12:30:00"),
        w("12:25:00", "12:55:00"),
        w("14:00:00", "14:30:00"),
      ]).map((s) => shown(s)),
    ).toEqual(["[12:00:00.000,13:20:00.000)", "[14:00:00.000,14:30:00.000)"]);
  });
});

const sessionPipeline = (window: Record<string, unknown>, admission: Record<string, unknown> = {}) => ({
  name: "quakes",
  fields: { eventTime: "time", groupKey: "net", value: "mag" },
  window,
  watermark: { delay: "6 hours" },
  admission,
});

describe("session windows in the pipelines file", () => {
  it("reads window: { type: session, gap } with the gap in ms; it has no fixed window spec", () => {
    const parsed = pipelinesFileSchema.parse({ pipelines: [sessionPipeline({ type: "session", gap: "30 minutes" })] })
      .pipelines[0]!;
    expect(parsed.window).toEqual({ type: "session", gap: 1_800_000 });
    expect(sessionGapOf(parsed)).toBe(1_800_000);
    expect(() => windowSpecOf(parsed)).toThrow("pipeline quakes has session windows, which have no fixed window spec");
  });

  it("refuses a missing or non-positive gap, other keys, and admission.dedupe latest", () => {
    const issues = (window: Record<string, unknown>, admission?: Record<string, unknown>) => {
      const r = pipelinesFileSchema.safeParse({ pipelines: [sessionPipeline(window, admission)] });
      return r.success ? "accepted" : formatIssues(r.error);
    };
    expect(issues({ type: "session", gap: "0 seconds" })).toBe(
      "  pipelines[0].window.gap: expected a duration greater than zero (session gap)",
    );
    expect(issues({ type: "session", size: "30 minutes", gap: "30 minutes" })).toBe(
      '  pipelines[0].window: Unrecognized key: "size"',
    );
    expect(issues({ type: "session", gap: "1 month" })).toMatch(
      /^ {2}pipelines\[0\]\.window\.gap: months have no fixed length/,
    );
    expect(issues({ type: "session", gap: "30 minutes" }, { dedupe: "latest" })).toBe(
      '  pipelines[0].admission.dedupe: session windows take admission.dedupe "first" or false: an amended event ("latest") would move between sessions',
    );
    expect(issues({ type: "session", gap: "30 minutes" }, { dedupe: "first" })).toBe("accepted");
  });

  it("is part of the policy: a changed gap, or a change of kind, is named as written (an offset at its default is no change)", () => {
    const parse = (window: Record<string, unknown>) =>
      pipelinesFileSchema.parse({ pipelines: [sessionPipeline(window)] }).pipelines[0]!;
    const change = (a: Record<string, unknown>, b: Record<string, unknown>) =>
      diffPolicies(policyOf(parse(a)), policyOf(parse(b))).map((c) => c.text);
    expect(change({ type: "session", gap: "30 minutes" }, { type: "session", gap: "1 hour" })).toEqual([
      "window.gap: 30 minutes → 1 hour",
    ]);
    expect(change({ type: "tumbling", size: "1 day" }, { type: "session", gap: "30 minutes" })).toEqual([
      "window.gap: (not set) → 30 minutes",
      "window.size: 1 day → (not set)",
      "window.type: tumbling → session",
    ]);
  });
});
