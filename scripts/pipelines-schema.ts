/**
 * Writes the pipelines file's JSON Schema (src/config/pipelinesJsonSchema.ts) to
 * `pipelines.schema.json` at the repository's root: `node --import tsx scripts/pipelines-schema.ts`.
 * Run it after changing the config schema (src/config/pipelineSchema.ts and the settings and window modules it takes); a test fails until it is run.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { pipelinesJsonSchema } from "../src/config/pipelinesJsonSchema.js";

const file = path.resolve(import.meta.dirname, "..", "pipelines.schema.json");
writeFileSync(file, `${JSON.stringify(pipelinesJsonSchema(), null, 2)}\n`);
console.log(`wrote ${path.relative(process.cwd(), file) || file}`);
