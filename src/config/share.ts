/**
 * Shares as people write them: the one grammar of every share Straggler reads
 * (the alerts' `dropShare.above` and `quarantineShare.above` in the pipelines
 * file, `straggler lateness --target-drop`, `GET /pipelines/{p}/lateness?targetDrop=`).
 *
 *   share  := number [ "%" ]          (text; surrounding and inner blanks allowed: "5 %")
 *   number := digits [ "." digits ] | "." digits
 *
 * With `%` it is a percentage (`0.1%` = 0.001), without it a share (`0.001`).
 * A YAML/JSON number is a share as is. The result is in [0, 1]: at most 100 %.
 * Refused, with one message naming both forms: a sign, an exponent, a unit
 * other than `%`, anything above 100 %.
 */

export type ShareResult = { ok: true; share: number } | { ok: false; message: string };

const SHARE_TEXT = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*$/;

/**
 * Reads a share (see the module comment for the grammar).
 * @param input text (`"0.1%"`, `"0.001"`) or a number (a share, `0.001`)
 * @param what what the share is, for the message (`"drop share"`)
 * @returns `{ ok: true, share }` with `share` in [0, 1], or `{ ok: false, message }`; never throws
 */
export function readShare(input: unknown, what = "share"): ShareResult {
  let share = NaN;
  if (typeof input === "number") share = input;
  else if (typeof input === "string") {
    const m = SHARE_TEXT.exec(input);
    if (m) share = Number(m[1]) / (m[2] ? 100 : 1);
  }
  if (!(share >= 0 && share <= 1)) {
    const got = typeof input === "string" || typeof input === "number" ? JSON.stringify(input) : String(input);
    return { ok: false, message: `expected a ${what} like 0.1% or 0.001 (from 0 to 100%), got ${got}` };
  }
  return { ok: true, share };
}
