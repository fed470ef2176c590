/**
 * How a pipeline setting is shown when a policy change is reported
 * (src/config/policy.ts): the config schema tags the schemas whose parsed
 * value is not what the user wrote — a duration parsed to milliseconds, an
 * instant parsed to epoch microseconds — so the report can write them back
 * readably (`1 hour`, `2026-09-19T12:00:00.000Z`). Kept apart from the schema
 * module so both it and the policy module can import it.
 */
import { z } from "zod";

/** `duration`: a number of milliseconds; `instant`: epoch microseconds (a bigint); `dedupe`: `true` is shown as `first`. */
export type SettingKind = "duration" | "instant" | "dedupe";

/** Schemas tagged with the kind of value they parse to. */
export const settingKinds = z.registry<{ kind: SettingKind }>();

/**
 * Schemas that parse by choosing one of several object schemas themselves
 * (the `window` block: fixed-length or calendar), with those schemas, so the
 * policy's setting walk finds their kinds and defaults.
 */
export const settingAlternatives = z.registry<{ options: readonly unknown[] }>();

/** Tags `schema` (and returns it) as parsing its value with one of `options`. */
export function tagAlternatives<S extends z.ZodType>(schema: S, options: readonly unknown[]): S {
  settingAlternatives.add(schema as z.ZodType, { options });
  return schema;
}

/** Tags `schema` (and returns it) as parsing to a value of `kind`. */
export function tagSetting<S extends z.ZodType>(schema: S, kind: SettingKind): S {
  settingKinds.add(schema as z.ZodType, { kind });
  return schema;
}
