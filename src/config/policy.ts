/**
 * A pipeline's policy: every setting that changes its results — `fields`,
 * `timestamps`, `window`, `watermark` and `admission`, each taken whole from
 * the validated config, so a setting added to one of these blocks is part of
 * the policy without further work. Everything else (trigger, source and its
 * landing folder, replay, correction schedule, alerts) may change freely.
 *
 * The policy is kept as canonical JSON (keys sorted, bigints as decimal
 * strings, unset settings left out) and identified by a hash of that text,
 * the `policy_version` recorded with every landing (`landed_sources`) and with the live
 * results (`straggler.results_versions`, src/guards/policy.ts).
 */
import { createHash } from "node:crypto";
import { formatDuration } from "./duration.js";
import { formatInstant } from "../core/instants.js";
import { sameTimeZoneName } from "../core/windows.js";
import { pipelineSchema, type PipelineConfig } from "./pipelineSchema.js";
import { WEEKDAYS } from "./windowSchema.js";
import { settingAlternatives, settingKinds, type SettingKind } from "./policySettings.js";

/** The blocks of a pipeline config that make up its policy (issue "policy versions": what changes results). */
const POLICY_BLOCKS = ["fields", "timestamps", "window", "watermark", "admission"] as const;

/** A policy as plain JSON values: `{ fields: {...}, timestamps: {...}, window: {...}, watermark: {...}, admission: {...} }`. */
export type PolicyDocument = Record<string, unknown>;

/** JSON-safe copy: bigint → decimal string, undefined members dropped, object keys sorted. */
function normalize(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(normalize);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = normalize(x);
    }
    return out;
  }
  return v;
}

/** The policy of a validated pipeline config (its `POLICY_BLOCKS`, normalized). */
export function policyOf(pipeline: PipelineConfig): PolicyDocument {
  const picked: Record<string, unknown> = {};
  for (const block of POLICY_BLOCKS) picked[block] = pipeline[block];
  return normalize(picked) as PolicyDocument;
}

/** The canonical text of a policy: JSON with sorted keys and no whitespace (what is stored and hashed). */
export function canonicalPolicy(doc: PolicyDocument): string {
  return JSON.stringify(normalize(doc));
}

/** The policy version of a canonical policy text: the first 16 hex digits of its SHA-256. */
export function policyHash(canonical: string): string {
  return createHash("sha256").update(canonical).digest("hex").slice(0, 16);
}

/** Per setting path (`window.size`): the kind of value it parses to, and its schema default (in parsed form). */
interface SettingInfo {
  kinds: Map<string, SettingKind>;
  defaults: Map<string, unknown>;
}

let info: SettingInfo | undefined;

/** Walks the pipeline schema once: the tagged kinds and the defaults of every setting path. */
function settingInfo(): SettingInfo {
  if (info) return info;
  const found: SettingInfo = { kinds: new Map(), defaults: new Map() };
  const walk = (schema: unknown, path: string): void => {
    const s = schema as { _zod?: { def: Record<string, unknown> } };
    if (!s?._zod) return;
    const meta = settingKinds.get(schema as never);
    if (meta) found.kinds.set(path, meta.kind);
    for (const option of settingAlternatives.get(schema as never)?.options ?? []) walk(option, path);
    const def = s._zod.def;
    switch (def.type) {
      case "object":
        for (const [k, child] of Object.entries(def.shape as Record<string, unknown>))
          walk(child, path === "" ? k : `${path}.${k}`);
        break;
      case "default":
        if (!found.defaults.has(path)) found.defaults.set(path, normalize(def.defaultValue));
        walk(def.innerType, path);
        break;
      case "prefault":
      case "nullable":
      case "optional":
      case "readonly":
      case "catch":
      case "nonoptional":
        walk(def.innerType, path);
        break;
      case "pipe":
        walk(def.in, path);
        walk(def.out, path);
        break;
      case "union":
        for (const option of def.options as unknown[]) walk(option, path);
        break;
    }
  };
  walk(pipelineSchema, "");
  info = found;
  return found;
}

/** One setting that differs between two policies. `before`/`after` are JSON values; undefined = not set. */
export interface PolicyChange {
  /** Dotted path of the setting as the user writes it, e.g. `admission.maxFutureSkew`, `window.timeZone`. */
  path: string;
  before: unknown;
  after: unknown;
  /** `path: before → after`, values written readably (durations as `1 hour`, instants as ISO 8601 UTC, unset as `(not set)`). */
  text: string;
}

/** A setting's value as the user would write it: durations and instants turned back from ms and µs. */
function showSetting(path: string, v: unknown): string {
  if (v === undefined) return "(not set)";
  if (v === null) return "null";
  const kind = settingInfo().kinds.get(path);
  if (kind === "duration" && typeof v === "number") return formatDuration(v);
  if (kind === "instant" && typeof v === "string" && /^-?\d+$/.test(v)) return formatInstant(BigInt(v));
  if (kind === "dedupe" && v === true) return "first";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** A calendar window's policy (`{ type, calendar: { unit, span, timeZone, weekStart } }`) as the user writes it: `{ type, size: "7 days", slide?: "1 day", timeZone, weekStart: "monday" }`. */
function calendarAsWritten(w: Record<string, unknown>): Record<string, unknown> {
  const { unit, span, timeZone, weekStart } = w.calendar as {
    unit: string;
    span: number;
    timeZone: string;
    weekStart: number;
  };
  return {
    type: w.type,
    size: `${span} ${unit}${span === 1 ? "" : "s"}`,
    slide: w.type === "sliding" ? `1 ${unit}` : undefined,
    timeZone,
    weekStart: Object.entries(WEEKDAYS).find(([, n]) => n === weekStart)?.[0] ?? weekStart,
  };
}

/** A fixed-length window's policy with its size and slide (ms) as the user writes them (`"1 day"`), to compare against a calendar window's `calendarAsWritten`. */
function fixedAsWritten(w: unknown): unknown {
  if (!isObject(w)) return w;
  const written = (v: unknown) => (typeof v === "number" ? formatDuration(v) : v);
  return { ...w, size: written(w.size), slide: written(w.slide), gap: written(w.gap) };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The settings that differ between `before` and `after`, leaf by leaf (lists
 * compare whole), blocks in `POLICY_BLOCKS` order then keys in order. A
 * setting present on one side only, at its schema default on that side, is
 * not a change: it is one a newer Straggler added (or dropped), and the old
 * results were computed as its default says. Two calendar windows are
 * compared by the keys the user writes (`window.size: 1 day → 7 days`,
 * `window.timeZone`, `window.weekStart: monday → sunday`), zone names
 * case-insensitively; so are a fixed-length window and a calendar one
 * (`window.timeZone: (not set) → America/New_York`, `window.size: 7 days → 1 week`).
 */
export function diffPolicies(before: PolicyDocument, after: PolicyDocument): PolicyChange[] {
  const { defaults } = settingInfo();
  const out: PolicyChange[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(normalize(a)) === JSON.stringify(normalize(b));
  const visit = (a: unknown, b: unknown, path: string, keys?: string[]): void => {
    if (isObject(a) && isObject(b)) {
      const all = keys ?? [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const k of all) visit(a[k], b[k], path === "" ? k : `${path}.${k}`);
      return;
    }
    if (same(a, b)) return;
    // Zone names are case-insensitive: results recorded under `america/new_york` are `America/New_York`'s.
    if (path === "window.timeZone" && typeof a === "string" && typeof b === "string" && sameTimeZoneName(a, b)) return;
    if (
      (a === undefined && defaults.has(path) && same(b, defaults.get(path))) ||
      (b === undefined && defaults.has(path) && same(a, defaults.get(path)))
    )
      return;
    out.push({ path, before: a, after: b, text: `${path}: ${showSetting(path, a)} → ${showSetting(path, b)}` });
  };
  const extra = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => !(POLICY_BLOCKS as readonly string[]).includes(k))
    .sort();
  // Two calendar windows compare as the user writes them (window.size, window.timeZone, ...), not as parsed (window.calendar.span).
  const calendarOf = (doc: PolicyDocument) =>
    isObject(doc.window) && isObject(doc.window.calendar) ? doc.window : undefined;
  const [wa, wb] = [calendarOf(before), calendarOf(after)];
  if (wa && wb) {
    before = { ...before, window: calendarAsWritten(wa) };
    after = { ...after, window: calendarAsWritten(wb) };
  } else if (wa || wb) {
    // A fixed-length window against a calendar one: both as written, so the change reads
    // `window.timeZone: (not set) → America/New_York` (and window.size only when it reads differently).
    // weekStart at its default (monday) is not written, so it is no change against a fixed-length window.
    const calendar = (w: Record<string, unknown>) => {
      const written = calendarAsWritten(w);
      return written.weekStart === "monday" ? { ...written, weekStart: undefined } : written;
    };
    before = { ...before, window: wa ? calendar(wa) : fixedAsWritten(before.window) };
    after = { ...after, window: wb ? calendar(wb) : fixedAsWritten(after.window) };
  }
  visit(before, after, "", [...POLICY_BLOCKS, ...extra]);
  return out;
}
