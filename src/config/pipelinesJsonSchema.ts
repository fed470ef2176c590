/**
 * The JSON Schema of the pipelines file (`pipelines.schema.json` at the repository's root), made
 * from the zod schema (`pipelinesFileSchema`, src/config/pipelineSchema.ts) with `z.toJSONSchema`: the
 * input side (what a person writes), JSON Schema draft-07 (what editors' YAML support reads, e.g.
 * `# yaml-language-server: $schema=…`). What zod cannot say itself is filled in from the schemas'
 * tags (src/config/policySettings.ts): a duration is a string such as "10 minutes" (its default
 * shown as one too), an instant an ISO 8601 date-time, the `window` block one of its shapes; a
 * share and a calendar length from `jsonSchemaHints`. The checks beyond shapes (a cron expression,
 * a time zone, a slide no longer than the size, …) stay with the service: the schema helps an
 * editor, `straggler` is the judge. `scripts/pipelines-schema.ts` writes the file; a test keeps it
 * in sync.
 */
import { z } from "zod";
import { formatDuration } from "./duration.js";
import { jsonSchemaHints } from "./jsonSchemaHints.js";
import { pipelinesFileSchema } from "./pipelineSchema.js";
import { settingAlternatives, settingKinds } from "./policySettings.js";

type Json = Record<string, unknown>;

const DURATION: Json = {
  type: "string",
  pattern: "^\\s*(?:interval\\s+)?(?:\\+?\\d+(?:\\.\\d+)?\\s+[A-Za-z]+\\s*)+$",
  description:
    'a duration as Spark writes it: "10 minutes", "1 hour 30 minutes" (weeks, days, hours, minutes, seconds, milliseconds, microseconds)',
  examples: ["10 minutes", "1 hour"],
};
const INSTANT: Json = {
  type: "string",
  format: "date-time",
  description: "an ISO 8601 instant with a zone",
  examples: ["2026-01-01T00:00:00Z"],
};

/** Replaces `target`'s keys but `default` with `source`'s (the override callback may only change the object in place). */
function replace(target: Json, source: Json): void {
  for (const k of Object.keys(target)) if (k !== "default") delete target[k];
  Object.assign(target, structuredClone(source));
}

const params = (): Parameters<typeof z.toJSONSchema>[1] => ({
  target: "draft-07",
  io: "input",
  unrepresentable: "any",
  override({ zodSchema, jsonSchema }) {
    const schema = zodSchema as unknown as z.ZodType;
    const json = jsonSchema as Json;
    const kind = settingKinds.get(schema)?.kind;
    const hint = jsonSchemaHints.get(schema)?.jsonSchema;
    const alternatives = settingAlternatives.get(schema)?.options;
    if (kind === "duration") replace(json, DURATION);
    else if (kind === "instant") replace(json, INSTANT);
    else if (hint !== undefined) replace(json, hint);
    else if (alternatives !== undefined) replace(json, { anyOf: alternatives.map((o) => schemaOf(o as z.ZodType)) });
    // zod leaves out the default of a transform's input (it is of the output type): a duration's is shown as the duration it is.
    const def = (
      zodSchema as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; defaultValue?: unknown } } }
    )._zod.def;
    if (def.type === "default" && def.innerType !== undefined) {
      let inner: z.ZodType = def.innerType;
      const wrapped = (inner as unknown as { _zod: { def: { type: string; innerType?: z.ZodType } } })._zod.def;
      if (wrapped.type === "nullable" && wrapped.innerType !== undefined) inner = wrapped.innerType; // `.nullable().default(…)`
      if (settingKinds.get(inner)?.kind === "duration")
        json.default = typeof def.defaultValue === "number" ? formatDuration(def.defaultValue) : def.defaultValue;
      // Other defaults over a transform (`alerts.dropShare`'s share) are values the input takes too.
      else if (json.default === undefined) json.default = structuredClone(def.defaultValue);
    }
  },
});

function schemaOf(schema: z.ZodType): Json {
  const json = z.toJSONSchema(schema, params()) as Json;
  delete json.$schema;
  return json;
}

/** The pipelines file's JSON Schema (draft-07), as `pipelines.schema.json` holds it. */
export function pipelinesJsonSchema(): Json {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "Straggler pipelines file",
    description:
      "pipelines.yaml (README: Configuration). Generated from the service's own schema (src/config/pipelineSchema.ts); the service checks more than the shapes here.",
    ...schemaOf(pipelinesFileSchema),
  };
}
