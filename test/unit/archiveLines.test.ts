/** `straggler archive` and `straggler compact` for people (src/cli/commands/retention.ts): a summary line first, then each list of partitions cut at --limit. */
import { describe, expect, it } from "vitest";
import { archiveLines, compactLines, planLines } from "../../src/cli/commands/retention.js";
import type { ArchiveManifest, ArchiveRun } from "../../src/retention/archive.js";
import type { PartitionVerdict } from "../../src/retention/archivePlan.js";

const verdict = (month: number, archivable: boolean): PartitionVerdict => ({
  partition: `bronze_events_p2026${String(month).padStart(2, "0")}`,
  rangeStart: "-",
  rangeEnd: "-",
  rows: 100 * month,
  archivable,
  restored: false,
  reasons: archivable ? [] : ["ret: within the correction horizon"],
  pipelines: [],
});
const manifest = (partition: string, rows: number) =>
  ({
    partition,
    pipeline: "ret",
    rows,
    byStatus: { accepted: rows - 1, quarantined: 1 },
    byReason: { NULL_TS: 1 },
    eventTime: { min: "2026-01-01T00:00:00.000Z", max: "2026-01-31T00:00:00.000Z" },
    sha256: "abc",
    bytes: 42,
  }) as unknown as ArchiveManifest;
const archived = (month: number) => {
  const v = verdict(month, true);
  return {
    partition: v.partition,
    rows: v.rows,
    archives: [{ manifestFile: `archive/${v.partition}.ret.manifest.json`, manifest: manifest(v.partition, v.rows) }],
  };
};

describe("archive's lines", () => {
  it("the summary line, the first --limit partitions archived (with their files) and kept, how many more", () => {
    const run: ArchiveRun = {
      archived: [archived(1), archived(2), archived(3)],
      kept: [verdict(4, false), verdict(5, false)],
    };
    expect(archiveLines(run, 1)).toEqual([
      "3 partitions archived (600 rows), 2 kept",
      [
        "bronze_events_p202601: archived 100 rows, partition dropped",
        "  ret: 100 rows (accepted 99, quarantined 1: NULL_TS 1), event times 2026-01-01T00:00:00.000Z to 2026-01-31T00:00:00.000Z",
        "    archive/bronze_events_p202601.ret.manifest.json (sha256 abc, 42 bytes)",
      ].join("\n"),
      "… and 2 more partitions archived (--limit N shows more, --json all)",
      "bronze_events_p202604: kept (400 rows): ret: within the correction horizon",
      "… and 1 more partitions kept (--limit N shows more, --json all)",
    ]);
    expect(archiveLines({ archived: [], kept: [] }, 20)).toEqual(["no closed partitions: nothing to archive"]);
  });

  it("--dry-run: how many closed partitions would be archived, then each (the first --limit)", () => {
    expect(planLines([verdict(1, true), verdict(2, false), verdict(3, true)], 2)).toEqual([
      "3 closed partitions: 2 would be archived, 1 kept",
      "bronze_events_p202601: 100 rows, would be archived",
      "bronze_events_p202602: 200 rows, kept: ret: within the correction horizon",
      "… and 1 more partitions (--limit N shows more, --json all)",
    ]);
    expect(planLines([], 20)).toEqual(["no closed partitions: nothing to archive"]);
  });
});

describe("compactLines", () => {
  it("says when nothing was left to compact, else the total and each partition's index MB before and after", () => {
    expect(compactLines([])).toEqual(["no closed partition left to compact"]);
    expect(
      compactLines([
        { partition: "bronze_events_p202609", indexBytesBefore: 34_078_720, indexBytesAfter: 25_690_112, ms: 812 },
        { partition: "bronze_events_p202610", indexBytesBefore: 1_048_576, indexBytesAfter: 524_288, ms: 40 },
      ]),
    ).toEqual([
      "2 closed partitions compacted: indexes 33.5 MB → 25.0 MB",
      "bronze_events_p202609: indexes 32.5 MB → 24.5 MB (812 ms)",
      "bronze_events_p202610: indexes 1.0 MB → 0.5 MB (40 ms)",
    ]);
  });
});
