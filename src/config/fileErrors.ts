/**
 * Errors of the pipelines file with their place in it: each line `file:line:column: path: message`
 * (lines and columns from 1, as compilers write them, so editors and terminals can jump there),
 * from the YAML document's source positions (`yaml`'s `parseDocument` with a `LineCounter`). An
 * unknown key (a typo) comes first, with the nearest allowed key ("did you mean") by Levenshtein
 * distance (fastest-levenshtein) among the keys the pipelines file's JSON Schema allows there
 * (src/config/pipelinesJsonSchema.ts), or the allowed keys when none is near; a required setting
 * that is absent is named as missing.
 */
import { distance } from "fastest-levenshtein";
import { isMap, isNode, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from "yaml";
import type { z } from "zod";
import { pipelinesJsonSchema } from "./pipelinesJsonSchema.js";

type Path = (string | number)[];
type Json = Record<string, unknown>;

/** `pipelines[0].window.size` for `["pipelines", 0, "window", "size"]`; `(root)` for `[]`. */
export function pathText(path: Path): string {
  return (
    path
      .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
      .join("")
      .replace(/^\./, "") || "(root)"
  );
}

/** Where `path` is written in `doc` (an offset): the key of its pair, or the item of a list; for a path that is not written, the nearest enclosing one. */
function offsetOf(doc: Document, path: Path): number {
  let node: Node | null | undefined = doc.contents as Node | null;
  let at = node?.range?.[0] ?? 0;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && (isScalar(p.key) ? p.key.value : p.key) === seg);
      if (!pair) return at;
      at = (isNode(pair.key) ? pair.key.range?.[0] : undefined) ?? at;
      node = pair.value as Node | null;
    } else if (isSeq(node) && typeof seg === "number") {
      const item = node.items[seg] as Node | undefined;
      if (!item) return at;
      at = item.range?.[0] ?? at;
      node = item;
    } else return at;
  }
  return at;
}

/** `file:line:column` of `path` in the document. */
export function placeOf(file: string, doc: Document, lines: LineCounter, path: Path): string {
  const { line, col } = lines.linePos(offsetOf(doc, path));
  return `${file}:${line}:${col}`;
}

/** The JSON Schema nodes that describe the value at `path` (several where the schema offers alternatives). */
function schemasAt(root: Json, path: Path): Json[] {
  const expand = (s: Json): Json[] => [
    s,
    ...(["anyOf", "oneOf", "allOf"] as const).flatMap((k) => ((s[k] as Json[] | undefined) ?? []).flatMap(expand)),
  ];
  let here = expand(root);
  for (const seg of path) {
    here = here.flatMap((s) => {
      if (typeof seg === "number") return s.items && typeof s.items === "object" ? expand(s.items as Json) : [];
      const props = s.properties as Record<string, Json> | undefined;
      if (props?.[seg]) return expand(props[seg]);
      return s.additionalProperties && typeof s.additionalProperties === "object"
        ? expand(s.additionalProperties as Json)
        : [];
    });
  }
  return here;
}

let schema: Json | undefined;

/** The keys the pipelines file allows at `path` (an object), in the schema's order. */
export function allowedKeys(path: Path): string[] {
  schema ??= pipelinesJsonSchema();
  return [...new Set(schemasAt(schema, path).flatMap((s) => Object.keys((s.properties as Json | undefined) ?? {})))];
}

/** The allowed key nearest `key` (case ignored), when it is a plausible typo: at most 2 edits, or a third of its length. */
export function nearestKey(key: string, allowed: string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const a of allowed) {
    const d = distance(key.toLowerCase(), a.toLowerCase());
    if (best === undefined || d < best.d) best = { key: a, d };
  }
  return best !== undefined && best.d <= Math.max(2, Math.floor(key.length / 3)) ? best.key : undefined;
}

/** The value at `path` of `value`, or undefined where it is absent. */
function valueAt(value: unknown, path: Path): unknown {
  let v = value;
  for (const seg of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

/**
 * The issues of validating `raw` (the file's parsed value), one line each (`  file:line:col: path: message`):
 * unknown keys first in the file's order (with "did you mean"), then the others in zod's order.
 */
export function describeIssues(
  error: z.ZodError,
  raw: unknown,
  file: string,
  doc: Document,
  lines: LineCounter,
): string {
  const unknown: { at: number; line: string }[] = [];
  const others: string[] = [];
  for (const issue of error.issues) {
    const path = issue.path as Path;
    if (issue.code === "unrecognized_keys") {
      const allowed = allowedKeys(path);
      for (const key of issue.keys) {
        const near = nearestKey(
          key,
          allowed.filter((a) => valueAt(raw, [...path, a]) === undefined),
        );
        const hint = near !== undefined ? `did you mean "${near}"?` : `expected one of ${allowed.join(", ")}`;
        unknown.push({
          at: offsetOf(doc, [...path, key]),
          line: `  ${placeOf(file, doc, lines, [...path, key])}: ${pathText([...path, key])}: unknown key; ${hint}`,
        });
      }
    } else if (
      issue.code === "invalid_type" &&
      path.length > 0 &&
      valueAt(raw, path) === undefined &&
      valueAt(raw, path.slice(0, -1)) !== undefined
    ) {
      others.push(`  ${placeOf(file, doc, lines, path.slice(0, -1))}: ${pathText(path)}: missing (required)`);
    } else {
      others.push(`  ${placeOf(file, doc, lines, path)}: ${pathText(path)}: ${issue.message}`);
    }
  }
  return [...unknown.sort((a, b) => a.at - b.at).map((u) => u.line), ...others].join("\n");
}
