/** `POST /pipelines/{pipeline}/events`: lands a request's events in bronze, once per Idempotency-Key. */
import type { Request } from "express";
import { z } from "zod";
import { landRecords } from "../ingest/copyToBronze.js";
import { SourceConflictError, type LandResult } from "../ingest/landAnswer.js";
import { landInGroup } from "../ingest/groupCommit.js";
import { readOptionsFor } from "../ingest/readers.js";
import type { RouteContext } from "./context.js";
import { readBody } from "./body.js";
import { HttpError, parseOr400 } from "./errors.js";
import { errors, json, WRITE_SECURITY } from "./openapi.js";
import { declaredInputs } from "../core/pipelineSpec.js";
import { landResponse, pipelineParams } from "./schemas.js";

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

/** Media types an events body may be sent as (JSON array or NDJSON); none at all is read as both. */
const EVENT_TYPES = [
  "application/json",
  "application/x-ndjson",
  "application/ndjson",
  "application/jsonl",
  "application/x-jsonlines",
  "application/jsonlines",
  "text/plain",
];

/** 415 unless the events body's Content-Type is one of EVENT_TYPES (or `…+json`) in UTF-8. */
function checkEventsType(req: Request): void {
  const header = req.get("content-type");
  if (header === undefined) return;
  const [type = "", ...params] = header.split(";").map((x) => x.trim().toLowerCase());
  if (!EVENT_TYPES.includes(type) && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new HttpError(
      415,
      "unsupported_media_type",
      `Content-Type ${JSON.stringify(header.slice(0, 100))}: expected a JSON array (application/json) or NDJSON (application/x-ndjson)`,
    );
  }
  const charset = params
    .find((x) => x.startsWith("charset="))
    ?.slice(8)
    .replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new HttpError(
      415,
      "unsupported_media_type",
      `Content-Type charset ${JSON.stringify(charset.slice(0, 40))}: events bodies are read as UTF-8`,
    );
  }
}

/** `?input=`: the declared input the events come from (docs/DESIGN.md "Several inputs"); `default` without it. */
const eventsQuery = z.strictObject({
  input: z.string().optional().meta({
    description:
      "the input the events come from: default, or a name under the pipeline's watermark.inputs (each input has its own watermark delay)",
  }),
});

const eventsHeaders = z.object({
  "idempotency-key": z.string().regex(IDEMPOTENCY_KEY).optional().meta({
    description: "names one body: a retry with the same key and body lands nothing and answers the first answer again",
  }),
});

export function addEventRoutes({ routes, deps, pipelineOf, auth }: RouteContext): void {
  const limitBytes = deps.maxBodyBytes ?? 16 * 1024 * 1024;
  routes.add(
    {
      method: "post",
      path: "/pipelines/{pipeline}/events",
      operationId: "landEvents",
      summary: "Land events (JSON array or NDJSON) in bronze",
      description:
        "Each event is classified (accepted or quarantined with a reason). Send an Idempotency-Key header to make retries land once: the key names one body " +
        "(SHA-256 of its bytes after Content-Encoding); the same key and body again answers 200 with the first answer, another body 422. " +
        "A 503 `outcome_unknown` means the landing may have committed: retry with the same key.",
      security: WRITE_SECURITY,
      request: {
        params: pipelineParams,
        query: eventsQuery,
        headers: eventsHeaders,
        body: {
          required: true,
          content: {
            "application/json": { schema: z.array(z.record(z.string(), z.unknown())) },
            "application/x-ndjson": { schema: z.string().meta({ description: "one JSON object per line" }) },
          },
        },
      },
      responses: {
        201: json("landed", landResponse),
        200: json("already landed: the same Idempotency-Key and body; the first answer again", landResponse),
        ...errors([400, 401, 404, 413, 415, 422, 500, 503]),
      },
    },
    auth,
    async (req, res) => {
      const pipeline = pipelineOf(req);
      const { input } = parseOr400(eventsQuery, req.query, "query");
      const inputs = declaredInputs(pipeline);
      if (input !== undefined && !inputs.includes(input)) {
        throw new HttpError(
          400,
          "invalid_request",
          `query.input: pipeline ${pipeline.name} has no input ${JSON.stringify(input.slice(0, 130))}; its inputs are ${inputs.join(", ")} (watermark.inputs)`,
        );
      }
      const key = req.get("idempotency-key");
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key))
        throw new HttpError(
          400,
          "invalid_request",
          "Idempotency-Key: expected 1-128 characters of A-Z a-z 0-9 . _ : -",
        );
      checkEventsType(req);
      const body = await readBody(req, limitBytes, readOptionsFor(pipeline), deps.memoryBodyBytes);
      let r: LandResult;
      try {
        // Without a key the source is made up here, before anything lands, so that a lost
        // answer to COMMIT can be looked up by it.
        const source = `http:${key ?? crypto.randomUUID()}`;
        const opts = {
          landingTimeMs: Date.now(),
          requestSha256: body.sha256,
          newSource: key === undefined,
          ...(input === undefined ? {} : { input }),
        };
        // A body held in memory (body.ts: at most 256 KiB by default) lands by group commit (src/ingest/groupCommit.ts):
        // its records wait in memory for their group. A spooled one lands in a transaction of its own.
        const grouped = deps.groupCommit !== false && body.held === "memory";
        const landing = grouped
          ? landInGroup(deps.pool, pipeline, source, body.records(), opts)
          : landRecords(deps.pool, pipeline, source, body.records(), opts);
        r = await landing.catch((e: unknown) => {
          if (e instanceof SourceConflictError) {
            throw new HttpError(
              422,
              "idempotency_key_reused",
              `Idempotency-Key ${JSON.stringify(key)} was already used in pipeline ${pipeline.name} with a different request body; nothing landed. A retry must send the same body; new events need a new key`,
            );
          }
          throw e;
        });
      } finally {
        await body.remove(); // before the answer: a spooled body is gone once the client has its answer
      }
      res.status(r.alreadyLanded ? 200 : 201).json({
        pipeline: pipeline.name,
        source: r.source,
        alreadyLanded: r.alreadyLanded,
        landed: r.landed,
        accepted: r.accepted,
        quarantined: r.quarantined,
        byReason: r.byReason,
        firstSeq: r.firstSeq,
        lastSeq: r.lastSeq,
      });
    },
  );
}
