/**
 * The pipelines file (YAML or JSON): its loader, its errors, and the policy version of a pipeline.
 * The schema is src/config/pipelineSchema.ts (`PipelineConfig` is its `z.infer`); the window and
 * watermark derivations are the core's (src/core/pipelineSpec.ts), named here too for the modules
 * that import them with the config type.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { pipelinesFileSchema, type PipelineConfig } from "./pipelineSchema.js";
import { canonicalPolicy, policyHash, policyOf } from "./policy.js";
import { describeIssues, pathText, placeOf } from "./fileErrors.js";

export type { PipelineConfig } from "./pipelineSchema.js";
export {
  aggregatesOnTime,
  declaredInputs,
  sessionGapOf,
  watermarkSettingsOf,
  windowShapeOf,
  windowSpecOf,
} from "../core/pipelineSpec.js";

/** Raised when the pipelines file cannot be read or is invalid; the message names each bad field. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Formats zod issues as `path.to.field: message` lines. */
export function formatIssues(error: z.ZodError, prefix = ""): string {
  return error.issues
    .map(
      (i) =>
        `  ${prefix}${
          i.path
            .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
            .join("")
            .replace(/^\./, "") || "(root)"
        }: ${i.message}`,
    )
    .join("\n");
}

/**
 * The path of the first key named `__proto__` in the parsed file, or undefined. Such a key parses
 * as data but is dropped (or becomes a prototype) when validation copies the object, so a setting
 * would vanish silently.
 */
function reservedKeyPath(value: unknown, at: (string | number)[]): (string | number)[] | undefined {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = reservedKeyPath(v, [...at, i]);
      if (found !== undefined) return found;
    }
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "__proto__") return [...at, k];
      const found = reservedKeyPath(v, [...at, k]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Reads and validates a pipelines file. Relative `landingDir`s and `retention.archive`s are
 * resolved against the file's folder. Throws `ConfigError` naming every bad field, each on a line
 * `file:line:column: path: message` (src/config/fileErrors.ts: unknown keys first, with "did you
 * mean"); text that is not YAML or JSON is named at its first error's line and column.
 */
export function loadPipelines(file: string): PipelineConfig[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read pipelines file ${file}: ${(e as Error).message}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const bad = doc.errors[0];
  if (bad !== undefined) {
    const { line, col } = lines.linePos(bad.pos[0]);
    throw new ConfigError(
      `pipelines file ${file} is not valid YAML/JSON:\n  ${file}:${line}:${col}: ${bad.message.split("\n")[0]}`,
    );
  }
  const raw: unknown = doc.toJS();
  const invalid = (lines_: string) => new ConfigError(`invalid pipelines file ${file}:\n${lines_}`);
  const reserved = reservedKeyPath(raw, []);
  if (reserved !== undefined)
    throw invalid(
      `  ${placeOf(file, doc, lines, reserved)}: ${pathText(reserved)}: "__proto__" cannot be a name here (JavaScript objects drop it); choose another name`,
    );
  const parsed = pipelinesFileSchema.safeParse(raw);
  if (!parsed.success) throw invalid(describeIssues(parsed.error, raw, file, doc, lines));
  const names = new Set<string>();
  for (const [i, p] of parsed.data.pipelines.entries()) {
    if (names.has(p.name))
      throw invalid(
        `  ${placeOf(file, doc, lines, ["pipelines", i, "name"])}: pipelines[${i}].name: duplicate pipeline name "${p.name}"`,
      );
    names.add(p.name);
    if (p.source.landingDir !== undefined) p.source.landingDir = path.resolve(path.dirname(file), p.source.landingDir);
    if (p.retention !== undefined) p.retention.archive = path.resolve(path.dirname(file), p.retention.archive);
  }
  return parsed.data.pipelines;
}

/**
 * The pipeline's policy version: a hash of every setting that changes its
 * results (src/config/policy.ts: fields, timestamps, window, watermark,
 * admission). Recorded with each landing (`landed_sources.policy_version`) and with the live results.
 */
export function policyVersion(pipeline: PipelineConfig): string {
  return policyHash(canonicalPolicy(policyOf(pipeline)));
}
