/**
 * Routes and their OpenAPI 3.1 description in one declaration: `ApiRoutes.add`
 * registers a route's zod schemas (request and every response) with
 * `@asteasolutions/zod-to-openapi` and its handlers with express, so a
 * route cannot be served without being documented. `GET /openapi.json`
 * serves `document()`.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import type express from "express";
import type { RequestHandler } from "express";
import type { z } from "zod";
import { errorResponse } from "./schemas.js";

/** A response with a JSON body of `schema`. */
export const json = (description: string, schema: z.ZodType): ResponseConfig => ({ description, content: { "application/json": { schema } } });

const errorDescriptions = {
  400: "invalid request (an unknown query parameter included); the message names the bad field",
  401: "missing or wrong bearer token, or no token configured (a read needs one only when STRAGGLER_READ_TOKEN is set)",
  404: "no such pipeline",
  413: "body too large (counted after decompression)",
  415: "a Content-Type that is not accepted, an unsupported Content-Encoding, or a body in UTF-16 or UTF-32 (byte order mark)",
  422: "the Idempotency-Key was already used with a different body; nothing landed",
  500: "internal error (see the service log)",
  503: "database unreachable, or no room to hold a large body in the service's temporary folder (`unavailable`), no pooled connection free in time or more reads at once than STRAGGLER_READ_CONCURRENCY (`busy`), a read past STRAGGLER_READ_TIMEOUT (`read_timeout`), or a landing whose outcome is unknown (`outcome_unknown`); retry after the Retry-After header",
} as const;

/** `{ error, message }` responses for `codes`, with their usual descriptions (or the ones given). */
export function errors(codes: (keyof typeof errorDescriptions)[], descriptions: Partial<Record<keyof typeof errorDescriptions, string>> = {}): Record<string, ResponseConfig> {
  return Object.fromEntries(codes.map((c) => [String(c), json(descriptions[c] ?? errorDescriptions[c], errorResponse)]));
}

/** `/pipelines/{pipeline}/runs/{runId}` → `/pipelines/:pipeline/runs/:runId` */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

export class ApiRoutes {
  private readonly registry = new OpenAPIRegistry();

  constructor(private readonly app: express.Express) {
    this.registry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  }

  /** Serves `route.path` (OpenAPI `{param}` syntax) with `handlers` and documents it. */
  add(route: RouteConfig, ...handlers: RequestHandler[]): void {
    this.registry.registerPath(route);
    this.app[route.method as "get" | "post"](expressPath(route.path), ...handlers);
  }

  /** The OpenAPI 3.1 document of every route added so far. */
  document(): object {
    return new OpenApiGeneratorV31(this.registry.definitions).generateDocument({
      openapi: "3.1.0",
      info: { title: "Straggler", version: "0.1.0", description: "Event-time windows in PostgreSQL that stay right when events arrive late." },
    });
  }
}
