/**
 * The byte budget of the REST API's list answers: no answer of a read route holds more than about
 * `ANSWER_BYTES_DEFAULT` (4 MiB) of rows, whatever the rows hold (wide values stored under a
 * wider `admission.maxAbsValue`, long keys, long quarantine lines). A list cut short by the budget
 * keeps its order and shape, and says so in the `Straggler-Truncated: true` header; its
 * `Straggler-Rows` header gives the rows sent. The first row is always sent (a row is at most about
 * 530 KB: four 131,001-digit numerics at the 1e131000 ceiling).
 */
import type { Response } from "express";

/** Default budget of one answer's rows, bytes of JSON. */
export const ANSWER_BYTES_DEFAULT = 4 * 1024 * 1024;

/** The header naming a list cut short by the budget. */
export const TRUNCATED_HEADER = "Straggler-Truncated";

/**
 * The longest prefix of `rows` whose JSON fits in `budgetBytes` (at least one row).
 * @returns the rows kept, and whether some were left out
 */
function cutToBudget<T>(rows: T[], budgetBytes: number): { rows: T[]; truncated: boolean } {
  let used = 2;
  for (let i = 0; i < rows.length; i++) {
    used += Buffer.byteLength(JSON.stringify(rows[i]) ?? "null") + 1;
    if (used > budgetBytes && i > 0) return { rows: rows.slice(0, i), truncated: true };
  }
  return { rows, truncated: false };
}

/**
 * Cuts a read route's answer to `budgetBytes`: an array, or the `rows` (and a reconcile report's
 * `mismatches`) of an object, left in order; sets `Straggler-Truncated: true` and
 * `Straggler-Rows` when something was cut. Any other answer is returned as it is.
 */
export function budgetAnswer(res: Response, answer: unknown, budgetBytes: number, alreadyTruncated = false): unknown {
  let truncated = alreadyTruncated;
  let out = answer;
  let sent: number | undefined;
  if (Array.isArray(answer)) {
    const cut = cutToBudget(answer, budgetBytes);
    truncated ||= cut.truncated;
    out = cut.rows;
    sent = cut.rows.length;
  } else if (answer !== null && typeof answer === "object") {
    const o = { ...(answer as Record<string, unknown>) };
    for (const field of ["rows", "mismatches", "changes"]) {
      const list = o[field];
      if (!Array.isArray(list)) continue;
      const cut = cutToBudget(list, budgetBytes);
      truncated ||= cut.truncated;
      o[field] = cut.rows;
      sent = cut.rows.length;
    }
    out = o;
  }
  if (truncated) {
    res.set(TRUNCATED_HEADER, "true");
    if (sent !== undefined) res.set("Straggler-Rows", String(sent));
  }
  return out;
}
