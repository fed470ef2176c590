/**
 * What a landing pass (src/ingest/landingFolder.ts `landPendingFiles`) does with one file of the
 * landing folder, from what it found on disk and what the file's record says (`straggler.source_files`).
 * Pure: the file's facts and the clock come in; reading the file, landing it and writing its record
 * are the caller's. Every case is a row of test/unit/landingDecision.test.ts.
 */
import type { SourceFileRecord } from "./sourceFiles.js";

/** What the pass found of a file on disk. */
export interface FileFacts {
  /** A regular file (not a link, folder, FIFO …) whose name the pipeline's format reads; else `refusal` may say why. */
  regular: boolean;
  refusal?: string;
  sizeBytes: number;
  mtimeMs: number;
}

/** The pipeline's settings that decide. */
export interface LandingRules {
  appendOnly: boolean;
  /** `source.settle`, ms. */
  settleMs: number;
  /** The pipeline's source configuration hash (a refused file is judged again once it changes). */
  configHash: string;
}

/**
 * The decision:
 * - `skip`: nothing to do, nothing recorded (a refusal already recorded, or an append-only file with no complete line yet);
 * - `refuse`: record the refusal (`record` false: recorded already, as it stands);
 * - `keepChanged`: a file changed after it landed stays so (`record`: its facts changed);
 * - `landAppended`: an append-only file grew past its landed bytes: land what follows, if a complete line does;
 * - `shrank`: an append-only file is smaller than what landed: changed after landing;
 * - `checkLanded`: a landed file's size or time changed: compare its bytes with what landed;
 * - `unchanged`: landed, nothing new;
 * - `wait`: not landed yet (`empty`: waits for content; else waits to settle), `record` when its record must say so, `log` when it starts waiting;
 * - `land`: a new file to land (`needsLine`: append-only, land only once it holds a complete line).
 */
export type LandingDecision =
  | { do: "skip" }
  | { do: "refuse"; reason: string; record: boolean }
  | { do: "keepChanged"; record: boolean }
  | { do: "landAppended" }
  | { do: "shrank"; landedBytes: number }
  | { do: "checkLanded" }
  | { do: "unchanged" }
  | { do: "wait"; empty: boolean; record: boolean; log: boolean }
  | { do: "land"; needsLine: boolean };

/**
 * Decides what the pass does with one file.
 * @param file what is on disk; @param row the file's record, undefined for a file never seen
 * @param nowMs the pass's clock, epoch ms (the settle time is measured against the file's whole-ms mtime)
 */
export function decideLanding(
  file: FileFacts,
  row: SourceFileRecord | undefined,
  rules: LandingRules,
  nowMs: number,
): LandingDecision {
  const same = row !== undefined && row.sizeBytes === file.sizeBytes && row.mtimeMs === Math.floor(file.mtimeMs);
  if (row?.state === "refused" && same && row.configHash === rules.configHash) return { do: "skip" };
  if (!file.regular)
    return { do: "refuse", reason: file.refusal ?? "not a regular file", record: row?.state !== "refused" || !same };
  if (row?.state === "changed_after_landing") return { do: "keepChanged", record: !same };
  if (row?.state === "landed") {
    if (rules.appendOnly && file.sizeBytes > row.landedBytes) return { do: "landAppended" };
    if (rules.appendOnly && file.sizeBytes < row.landedBytes) return { do: "shrank", landedBytes: row.landedBytes };
    if (!same && !rules.appendOnly) return { do: "checkLanded" };
    return { do: "unchanged" };
  }
  // New, waiting, or refused and changed since.
  const waiting = row?.state === "waiting_to_settle";
  // An empty file is one being created (`: > f`, then written): landing it now as 0 rows would
  // make its content a change after landing that never lands. It waits for content.
  if (file.sizeBytes === 0) return { do: "wait", empty: true, record: !waiting || !same, log: false };
  if (!rules.appendOnly && nowMs - Math.floor(file.mtimeMs) < rules.settleMs)
    return { do: "wait", empty: false, record: !waiting || !same, log: !waiting };
  return { do: "land", needsLine: rules.appendOnly };
}
