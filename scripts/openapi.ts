/**
 * Prints the REST API's OpenAPI 3.1 document (what `GET /openapi.json` serves) as JSON, so it can
 * be linted without a running service: `node --import tsx scripts/openapi.ts > openapi.json`.
 * The document does not depend on the pipelines or the database: no connection is made.
 */
import { apiDocument } from "../src/app.js";

process.stdout.write(`${JSON.stringify(apiDocument(), null, 2)}\n`);
