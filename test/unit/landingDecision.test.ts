/**
 * What a landing pass does with one file (src/ingest/landingDecision.ts), one row per case: the
 * file on disk, its record, the pipeline's rules and the clock, and the decision.
 */
import { describe, expect, it } from "vitest";
import {
  decideLanding,
  type FileFacts,
  type LandingDecision,
  type LandingRules,
} from "../../src/ingest/landingDecision.js";
import type { SourceFileRecord } from "../../src/ingest/sourceFiles.js";

const NOW = 1_000_000;
const SETTLE = 2_000;
const file = (sizeBytes: number, mtimeMs: number, regular = true): FileFacts => ({
  regular,
  refusal: regular ? undefined : "not a regular file: a folder",
  sizeBytes,
  mtimeMs,
});
const record = (
  state: SourceFileRecord["state"],
  sizeBytes: number,
  mtimeMs: number,
  more: Partial<SourceFileRecord> = {},
): SourceFileRecord => ({
  name: "a.jsonl",
  state,
  reason: null,
  sizeBytes,
  mtimeMs,
  sha256: null,
  configHash: "cfg",
  landedBytes: 0,
  landedLines: 0,
  ...more,
});
const rules = (appendOnly = false, configHash = "cfg"): LandingRules => ({ appendOnly, settleMs: SETTLE, configHash });
const OLD = NOW - 10_000; // settled long ago
const FRESH = NOW - 500; // modified within the settle time

const cases: [string, FileFacts, SourceFileRecord | undefined, LandingRules, LandingDecision][] = [
  ["a new settled file lands", file(10, OLD), undefined, rules(), { do: "land", needsLine: false }],
  [
    "a new append-only file lands once it holds a line",
    file(10, FRESH),
    undefined,
    rules(true),
    { do: "land", needsLine: true },
  ],
  [
    "a new file modified within the settle time waits, recorded and logged",
    file(10, FRESH),
    undefined,
    rules(),
    { do: "wait", empty: false, record: true, log: true },
  ],
  [
    "settling exactly at the settle time lands",
    file(10, NOW - SETTLE),
    undefined,
    rules(),
    { do: "land", needsLine: false },
  ],
  [
    "a waiting file still settling, unchanged: waits, nothing written",
    file(10, FRESH + 0.4),
    record("waiting_to_settle", 10, FRESH),
    rules(),
    { do: "wait", empty: false, record: false, log: false },
  ],
  [
    "a waiting file that grew: waits, recorded again, not logged again",
    file(20, FRESH),
    record("waiting_to_settle", 10, FRESH),
    rules(),
    { do: "wait", empty: false, record: true, log: false },
  ],
  [
    "a new empty file waits for content",
    file(0, OLD),
    undefined,
    rules(),
    { do: "wait", empty: true, record: true, log: false },
  ],
  [
    "an empty append-only file waits for content",
    file(0, OLD),
    undefined,
    rules(true),
    { do: "wait", empty: true, record: true, log: false },
  ],
  [
    "an empty file already waiting, unchanged: nothing written",
    file(0, OLD),
    record("waiting_to_settle", 0, OLD),
    rules(),
    { do: "wait", empty: true, record: false, log: false },
  ],
  [
    "not a regular file: refused",
    file(0, OLD, false),
    undefined,
    rules(),
    { do: "refuse", reason: "not a regular file: a folder", record: true },
  ],
  [
    "refused, unchanged, same configuration: skipped",
    file(10, OLD, false),
    record("refused", 10, OLD),
    rules(),
    { do: "skip" },
  ],
  [
    "refused, unchanged, configuration changed, still not regular: refused, not written again",
    file(10, OLD, false),
    record("refused", 10, OLD),
    rules(false, "cfg2"),
    { do: "refuse", reason: "not a regular file: a folder", record: false },
  ],
  [
    "refused, unchanged, configuration changed, a regular file: lands",
    file(10, OLD),
    record("refused", 10, OLD),
    rules(false, "cfg2"),
    { do: "land", needsLine: false },
  ],
  [
    "refused and changed since: judged again (lands)",
    file(12, OLD),
    record("refused", 10, OLD),
    rules(),
    { do: "land", needsLine: false },
  ],
  [
    "changed after landing, unchanged since: nothing written",
    file(10, OLD),
    record("changed_after_landing", 10, OLD),
    rules(),
    { do: "keepChanged", record: false },
  ],
  [
    "changed after landing, changed again: recorded",
    file(11, OLD),
    record("changed_after_landing", 10, OLD),
    rules(),
    { do: "keepChanged", record: true },
  ],
  ["landed, unchanged", file(10, OLD), record("landed", 10, OLD, { landedBytes: 10 }), rules(), { do: "unchanged" }],
  [
    "landed, its mtime changed: its bytes compared",
    file(10, OLD + 1),
    record("landed", 10, OLD, { landedBytes: 10 }),
    rules(),
    { do: "checkLanded" },
  ],
  [
    "landed append-only, grown: what follows lands",
    file(15, OLD),
    record("landed", 10, OLD, { landedBytes: 10 }),
    rules(true),
    { do: "landAppended" },
  ],
  [
    "landed append-only, shrunk: changed after landing",
    file(5, OLD),
    record("landed", 10, OLD, { landedBytes: 10 }),
    rules(true),
    { do: "shrank", landedBytes: 10 },
  ],
  [
    "landed append-only, same size, touched: unchanged",
    file(10, OLD + 5),
    record("landed", 10, OLD, { landedBytes: 10 }),
    rules(true),
    { do: "unchanged" },
  ],
];

describe("decideLanding", () => {
  it.each(cases)("%s", (_what, f, row, r, decision) => {
    expect(decideLanding(f, row, r, NOW)).toEqual(decision);
  });
});
