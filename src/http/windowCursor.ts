/**
 * The cursor of `GET /pipelines/{p}/windows`' next page (`?after=…`, from the
 * `Straggler-Next` header of the page before): the last window sent, as
 * base64url of the JSON array `[window_start, group_key, window_end]`
 * (instants as ISO 8601 strings, the group key as the view shows it, null for
 * the null group). Opaque to clients; checked when read.
 */
import type { WindowPosition } from "../db/sql/readmodel/readWindowResults.js";

/** The cursor that continues after `row` (a window row as the windows route answers it). */
export function windowCursor(row: unknown): string {
  const r = row as { window_start: string; group_key: string | null; window_end: string };
  return Buffer.from(JSON.stringify([r.window_start, r.group_key, r.window_end]), "utf8").toString("base64url");
}

/** The position a cursor names, or undefined when `text` is no cursor this route gave. */
export function parseWindowCursor(text: string): WindowPosition | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
    if (!Array.isArray(v) || v.length !== 3) return undefined;
    const [start, key, end] = v as unknown[];
    if (typeof start !== "string" || typeof end !== "string" || !(key === null || typeof key === "string"))
      return undefined;
    if (Number.isNaN(Date.parse(start)) || Number.isNaN(Date.parse(end))) return undefined;
    return { start, key, end };
  } catch {
    return undefined;
  }
}
