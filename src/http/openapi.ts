/**
 * The OpenAPI 3.1 description of the REST API, generated from the zod
 * schemas the routes validate with (`z.toJSONSchema`).
 */
import { z } from "zod";
import { correctionSummary, errorResponse, landResponse, limitQuery, quarantineQuery, rangeQuery, recomputeBody, sourcesQuery, sourcesResponse, windowsQuery } from "./schemas.js";

const json = (schema: z.ZodType, io: "input" | "output" = "output") => ({ "application/json": { schema: z.toJSONSchema(schema, { io, unrepresentable: "any" }) } });

function queryParams(schema: z.ZodType): object[] {
  const s = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as { properties?: Record<string, object>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, sch]) => ({ name, in: "query", required: (s.required ?? []).includes(name), schema: sch }));
}

const pipelineParam = { name: "pipeline", in: "path", required: true, schema: { type: "string" } };
const errors = {
  "400": { description: "invalid request (an unknown query parameter included); the message names the bad field", content: json(errorResponse) },
  "404": { description: "no such pipeline", content: json(errorResponse) },
  "503": { description: "database unreachable (`unavailable`), or no pooled connection free in time (`busy`); retry after the Retry-After header", content: json(errorResponse) },
};
const authErrors = { "401": { description: "missing or wrong bearer token, or no token configured", content: json(errorResponse) } };
const ok = (description: string, content?: object) => ({ "200": content ? { description, content } : { description } });

export function openApiDocument(): object {
  return {
    openapi: "3.1.0",
    info: { title: "Straggler", version: "0.1.0", description: "Event-time windows in PostgreSQL that stay right when events arrive late." },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    paths: {
      "/health": { get: { summary: "Database reachable?", responses: { ...ok("healthy"), "503": { description: "database unreachable" } } } },
      "/pipelines": { get: { summary: "Pipelines with watermark, lag, ledger, window counts and sources by state", responses: ok("pipelines") } },
      "/pipelines/{pipeline}/events": {
        post: {
          summary: "Land events (JSON array or NDJSON) in bronze",
          description:
            "Each event is classified (accepted or quarantined with a reason). Send an Idempotency-Key header to make retries land once: the key names one body " +
            "(SHA-256 of its bytes after Content-Encoding); the same key and body again answers 200 with the first answer, another body 422. " +
            "A 503 `outcome_unknown` means the landing may have committed: retry with the same key.",
          security: [{ bearer: [] }],
          parameters: [pipelineParam, { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string" } }],
          requestBody: { required: true, content: { "application/json": { schema: { type: "array", items: { type: "object" } } }, "application/x-ndjson": { schema: { type: "string" } } } },
          responses: {
            "201": { description: "landed", content: json(landResponse) },
            "200": { description: "already landed: the same Idempotency-Key and body; the first answer again", content: json(landResponse) },
            "413": { description: "body too large (counted after decompression)", content: json(errorResponse) },
            "415": { description: "a Content-Type that is not JSON or NDJSON in UTF-8, or an unsupported Content-Encoding", content: json(errorResponse) },
            "422": { description: "the Idempotency-Key was already used with a different body; nothing landed", content: json(errorResponse) },
            ...authErrors,
            ...errors,
          },
        },
      },
      "/pipelines/{pipeline}/recompute": {
        post: {
          summary: "Run a correction: windows awaiting correction, plus every final window in [from, to) when given",
          security: [{ bearer: [] }],
          parameters: [pipelineParam],
          requestBody: { required: false, content: json(recomputeBody, "input") },
          responses: { ...ok("the run summary", json(correctionSummary)), "415": { description: "a body that is not application/json", content: json(errorResponse) }, ...authErrors, ...errors },
        },
      },
      "/pipelines/{pipeline}/windows": { get: { summary: "Window results", parameters: [pipelineParam, ...queryParams(windowsQuery)], responses: { ...ok("windows"), ...errors } } },
      "/pipelines/{pipeline}/progress": { get: { summary: "Latest micro-batch progress", parameters: [pipelineParam, ...queryParams(limitQuery)], responses: { ...ok("batches"), ...errors } } },
      "/pipelines/{pipeline}/quarantine": { get: { summary: "Quarantined rows, by reason", parameters: [pipelineParam, ...queryParams(quarantineQuery)], responses: { ...ok("rows"), ...errors } } },
      "/pipelines/{pipeline}/sources": {
        get: {
          summary: "Every source (file, request, stdin, replay micro-batch) with its state: landed, refused (with its reason), changed_after_landing, waiting_to_settle",
          parameters: [pipelineParam, ...queryParams(sourcesQuery)],
          responses: { ...ok("counts by state, and the sources most recently seen first", json(sourcesResponse)), ...errors },
        },
      },
      "/pipelines/{pipeline}/failed-windows": {
        get: {
          summary: "Windows whose aggregate failed (a data exception such as a numeric overflow): their rows were quarantined as INVALID_VALUE and the pipeline went on",
          parameters: [pipelineParam, ...queryParams(limitQuery)],
          responses: { ...ok("failed windows, latest first; group_key null for the null group"), ...errors },
        },
      },
      "/pipelines/{pipeline}/corrections": { get: { summary: "Correction runs", parameters: [pipelineParam, ...queryParams(limitQuery)], responses: { ...ok("runs"), ...errors } } },
      "/pipelines/{pipeline}/corrections/{runId}": {
        get: { summary: "One correction run and the windows it changed (before/after)", parameters: [pipelineParam, { name: "runId", in: "path", required: true, schema: { type: "integer" } }], responses: { ...ok("run"), ...errors } },
      },
      "/pipelines/{pipeline}/reconcile": {
        get: { summary: "Compare final windows with a fresh recompute from bronze; check the ledger", parameters: [pipelineParam, ...queryParams(rangeQuery)], responses: { ...ok("report"), ...errors } },
      },
    },
  };
}
