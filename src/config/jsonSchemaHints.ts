/**
 * JSON Schema for config schemas zod cannot describe itself (a value read by a transform from
 * `z.unknown()`, such as a share or a calendar length): the pipelines file's JSON Schema
 * (src/config/pipelinesJsonSchema.ts) uses it in their place. Kept apart so the config schema
 * module can tag its schemas without importing the generator.
 */
import { z } from "zod";

export const jsonSchemaHints = z.registry<{ jsonSchema: Record<string, unknown> }>();

/** Tags `schema` (and returns it) with the JSON Schema of what it reads. */
export function describeAs<S extends z.ZodType>(schema: S, jsonSchema: Record<string, unknown>): S {
  jsonSchemaHints.add(schema as z.ZodType, { jsonSchema });
  return schema;
}
