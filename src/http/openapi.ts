/**
 * Routes and their OpenAPI 3.1 description in one declaration: `ApiRoutes.add`
 * registers a route's zod schemas (request and every response) with
 * `@asteasolutions/zod-to-openapi` and its handlers with express, so a
 * route cannot be served without being documented. `GET /openapi.json`
 * serves `document()`. A documented path asked with a method it does not
 * answer gets 405 with `Allow` (RFC 9110 §15.5.6), from `methodNotAllowed()`.
 */
import {
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  type RouteConfig,
} from "@asteasolutions/zod-to-openapi";
import type express from "express";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { z } from "zod";
import { alertChange, errorResponse } from "./schemas.js";
import { UNBUDGETED } from "./readBudget.js";
import { HttpError } from "./errors.js";

/** A response with a JSON body of `schema`. */
export const json = (description: string, schema: z.ZodType): ResponseConfig => ({
  description,
  content: { "application/json": { schema } },
});

const errorDescriptions = {
  400: "invalid request (an unknown query parameter included); the message names the bad field",
  401: "missing or wrong bearer token, or no token configured (a read needs one only when STRAGGLER_READ_TOKEN is set); the WWW-Authenticate header names the Bearer scheme",
  404: "no such pipeline",
  413: "body too large (counted after decompression)",
  415: "a Content-Type that is not accepted, an unsupported Content-Encoding, or a body in UTF-16 or UTF-32 (byte order mark)",
  422: "the Idempotency-Key was already used with a different body; nothing landed",
  500: "internal error (see the service log)",
  503: "database unreachable, or no room to hold a large body in the service's temporary folder (`unavailable`), no pooled connection free in time or more reads at once than STRAGGLER_READ_CONCURRENCY (`busy`), a read past STRAGGLER_READ_TIMEOUT (`read_timeout`), or a landing whose outcome is unknown (`outcome_unknown`); retry after the Retry-After header",
} as const;

/** `{ error, message }` responses for `codes`, with their usual descriptions (or the ones given). */
export function errors(
  codes: (keyof typeof errorDescriptions)[],
  descriptions: Partial<Record<keyof typeof errorDescriptions, string>> = {},
): Record<string, ResponseConfig> {
  return Object.fromEntries(
    codes.map((c) => [String(c), json(descriptions[c] ?? errorDescriptions[c], errorResponse)]),
  );
}

/** `/pipelines/{pipeline}/runs/{runId}` → `/pipelines/:pipeline/runs/:runId` */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

/** `/pipelines/{pipeline}/runs/{runId}` → a regular expression matching its request paths (one segment per parameter). */
const pathPattern = (path: string) =>
  new RegExp(
    `^${path
      .split(/\{\w+\}/)
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join("[^/]+")}/?$`,
  );

/** The name of the bearer security scheme (`components.securitySchemes`). */
const BEARER = "bearer";

/**
 * The security of a read (a `GET` the read budget covers, src/http/readBudget.ts): open (`{}`)
 * unless STRAGGLER_READ_TOKEN is set, then the bearer token.
 */
const READ_SECURITY: Record<string, string[]>[] = [{}, { [BEARER]: [] }];
/** The security of a mutating route: the bearer token (STRAGGLER_API_TOKEN). */
export const WRITE_SECURITY: Record<string, string[]>[] = [{ [BEARER]: [] }];

/** A route as `ApiRoutes.add` takes it: every one has an `operationId`; a mutating one declares its `security`. */
export type ApiRoute = RouteConfig & { operationId: string };

export class ApiRoutes {
  private readonly registry = new OpenAPIRegistry();
  /** Documented paths (OpenAPI syntax) → their methods, upper case. */
  private readonly methods = new Map<string, Set<string>>();

  constructor(private readonly app: express.Express) {
    this.registry.registerComponent("securitySchemes", BEARER, {
      type: "http",
      scheme: "bearer",
      description:
        "Mutating routes: STRAGGLER_API_TOKEN. Reads (every GET but the probes /livez, /readyz, /health and /openapi.json): open unless STRAGGLER_READ_TOKEN is set, then that token or STRAGGLER_API_TOKEN.",
    });
    this.registry.registerWebhook({
      method: "post",
      path: "alertChange",
      operationId: "alertChange",
      security: [], // the receiver is called without credentials (put a secret in the URL when it needs one)
      summary: "An alert changed state (ok ↔ firing): POSTed to the pipeline's alerts.webhook",
      description:
        "Sent once per change (src/observe/webhook.ts), retried with backoff (at most 6 attempts, 10 s each) while the receiver cannot be reached or answers 429 or 5xx; any 2xx accepts it.",
      request: { body: { required: true, content: { "application/json": { schema: alertChange } } } },
      responses: {
        "2XX": { description: "accepted: no retry" },
        429: { description: "retried later" },
        "5XX": { description: "retried later" },
        "4XX": { description: "any other 4xx: not retried; the change is logged as not delivered" },
      },
    });
  }

  /**
   * Serves `route.path` (OpenAPI `{param}` syntax) with `handlers` and documents it. A `GET` gets
   * its security from the read budget: `[]` for the probes and /openapi.json, else open or the read
   * token, with its 401 documented. @throws Error for a route that is not a GET and declares no security
   */
  add(route: ApiRoute, ...handlers: RequestHandler[]): void {
    let documented = route;
    if (route.method === "get") {
      const read = !UNBUDGETED.has(route.path);
      documented = {
        ...route,
        security: read ? READ_SECURITY : [],
        responses: read ? { ...route.responses, ...errors([401]) } : route.responses,
      };
    } else if (route.security === undefined)
      throw new Error(`${route.method.toUpperCase()} ${route.path}: a mutating route declares its security`);
    this.registry.registerPath(documented);
    const methods = this.methods.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    if (route.method === "get") methods.add("HEAD"); // express answers HEAD with the GET route
    this.methods.set(route.path, methods);
    this.app[route.method as "get" | "post"](expressPath(route.path), ...handlers);
  }

  /**
   * Middleware for after every route: a request whose path is documented but whose method is not
   * answers 405 `method_not_allowed` with `Allow` listing the path's methods (`OPTIONS`: 204 with
   * `Allow`); others pass on (to the 404).
   */
  methodNotAllowed(): RequestHandler {
    const patterns = [...this.methods].map(([path, methods]) => ({
      path,
      pattern: pathPattern(path),
      allow: [...methods].sort().join(", "),
    }));
    return (req: Request, res: Response, next: NextFunction) => {
      const known = patterns.find((p) => p.pattern.test(req.path));
      if (known === undefined) return next();
      res.set("Allow", known.allow);
      if (req.method === "OPTIONS") return void res.status(204).end(); // RFC 9110 §9.3.7: the methods, no body
      next(
        new HttpError(
          405,
          "method_not_allowed",
          `${req.method} is not answered at ${known.path}; it answers ${known.allow} (see GET /openapi.json)`,
        ),
      );
    };
  }

  /** The OpenAPI 3.1 document of every route added so far. */
  document(): object {
    return new OpenApiGeneratorV31(this.registry.definitions).generateDocument({
      openapi: "3.1.0",
      info: {
        title: "Straggler",
        version: "0.1.0",
        description: "Event-time windows in PostgreSQL that stay right when events arrive late.",
      },
      servers: [
        { url: "/", description: "the service that serves this document (`straggler serve`, PORT, default 8080)" },
      ],
    });
  }
}
