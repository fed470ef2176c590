/**
 * Named (server-side prepared) statements for the hot paths: a micro-batch
 * runs the same few statements thousands of times, and planning them each
 * time costs more than running them on a small batch. The name carries a
 * hash of the text, so two texts never share a name.
 */
import { createHash } from "node:crypto";
import type { QueryConfig } from "pg";

const names = new Map<string, string>();

/** A query config whose statement is prepared once per connection. */
export function prepared(label: string, text: string, values: unknown[] = []): QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `${label}_${createHash("sha1").update(text).digest("hex").slice(0, 12)}`;
    names.set(text, name);
  }
  return { name, text, values };
}
