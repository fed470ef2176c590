/**
 * HTTP errors as JSON `{ error, message }`: 4xx for the caller's mistakes;
 * 503 with `Retry-After` while the database is away, while no pooled
 * connection becomes free within the pool's acquisition timeout (`busy`),
 * and when a landing's outcome could not be found out (`outcome_unknown`).
 */
import { maxHeaderSize, type Server } from "node:http";
import type { Duplex } from "node:stream";
import type { NextFunction, Request, Response } from "express";
import { z } from "zod";
import { isPoolTimeout, isUnavailable } from "../db/errors.js";
import { CommitOutcomeUnknownError } from "../ingest/commitOutcome.js";
import type { Logger } from "../log.js";

/** An answer for the caller: HTTP `status`, `code` as the body's `error`; `cause` keeps the error it was made from, if any. */
export class HttpError extends Error {
  override name = "HttpError";
  /** Headers the answer carries (e.g. `WWW-Authenticate` on a 401). */
  readonly headers: Record<string, string>;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: ErrorOptions & { headers?: Record<string, string> },
  ) {
    super(message, options);
    this.headers = options?.headers ?? {};
  }
}

/** The error a read's query gets once its client has hung up (src/http/readBudget.ts cancels it); answered with no body (499). */
export class ClientGoneError extends Error {
  override name = "ClientGoneError";
  constructor() {
    super("the client closed the connection before the answer; the read was stopped");
  }
}

/**
 * Parses `value` with `schema`; throws a 400 naming the bad field (`where.field: message`).
 * For a query string (`where` = "query"; every route's query is parsed here), a parameter given
 * more than once (`?from=a&from=b`, which the query parser makes an array) where the schema takes
 * one value is named as such: "parameter from is given 2 times; give it once" (a parameter that
 * takes a list, like the lateness route's `delay`, may be repeated).
 */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const r = schema.safeParse(value);
  if (!r.success) {
    const given =
      where === "query" && value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
    const repeated = new Set<string>();
    const msgs: string[] = [];
    for (const i of r.error.issues) {
      const name = String(i.path[0] ?? "");
      const v = i.path.length === 1 ? given[name] : undefined;
      // The schema refused the list itself (a type or value check), not a value inside a list it takes.
      if (Array.isArray(v) && i.code !== "custom") {
        if (!repeated.has(name)) msgs.push(`parameter ${name} is given ${v.length} times; give it once`);
        repeated.add(name);
      } else msgs.push(`${[where, ...i.path.map(String)].join(".")}: ${i.message}`);
    }
    throw new HttpError(400, "invalid_request", msgs.join("; "));
  }
  return r.data;
}

/**
 * The message of a 4xx raised by express or body-parser (not an HttpError), for the caller: a path
 * segment whose percent-encoding does not decode (express's "Failed to decode param '…'") is named
 * with how to write it; any other keeps its own message.
 */
export function clientErrorMessage(err: Error): string {
  const m = /^Failed to decode param '(.*)'$/s.exec(err.message ?? "");
  if (m)
    return `path: ${JSON.stringify(m[1]!.slice(0, 200))} is not valid percent-encoding (a % must be followed by two hexadecimal digits of UTF-8; write %25 for a literal %)`;
  return err.message || "bad request";
}

/**
 * The JSON express.json's strict mode refused although it is valid JSON: a
 * scalar body (`null`, `3`, `"x"`, `true`), which it reports as a syntax error
 * ("Unexpected token 'n', \"null\" is not valid JSON").
 * @returns the scalar as JSON text (at most 40 characters), or undefined when the body is not a JSON scalar
 */
function jsonScalarOf(body: unknown): string | undefined {
  if (typeof body !== "string") return undefined;
  const text = body.trim();
  if (text === "" || text.startsWith("{") || text.startsWith("[")) return undefined;
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    // The client has hung up (src/http/readBudget.ts cancelled its read): there is no one to answer.
    if (
      err instanceof ClientGoneError ||
      (req.destroyed && res.writableEnded === false && (err as { code?: string }).code === "57014")
    ) {
      if (!res.headersSent) res.status(499).end();
      return;
    }
    if (err instanceof HttpError) {
      res.set(err.headers);
      if (err.status === 503 && res.get("Retry-After") === undefined) res.set("Retry-After", "5");
      res.status(err.status).json({ error: err.code, message: err.message });
      return;
    }
    const e = err as { type?: string; status?: number; message?: string };
    // body-parser errors: too large, bad encoding, malformed JSON.
    if (e.type === "entity.too.large") {
      res.status(413).json({ error: "payload_too_large", message: "request body is larger than the limit" });
      return;
    }
    if (e.type === "entity.parse.failed") {
      const scalar = jsonScalarOf((err as { body?: unknown }).body);
      if (scalar !== undefined) {
        res
          .status(400)
          .json({ error: "invalid_request", message: `request body must be a JSON object or array, got ${scalar}` });
        return;
      }
    }
    if (typeof e.status === "number" && e.status >= 400 && e.status < 500) {
      res.status(e.status).json({ error: "invalid_request", message: clientErrorMessage(err as Error) });
      return;
    }
    if (err instanceof CommitOutcomeUnknownError) {
      res.set("Retry-After", "5").status(503).json({
        error: "outcome_unknown",
        message:
          "the database connection dropped while the landing was committing and the database could not be asked since: it may have landed. Retry with the same Idempotency-Key: it lands once",
      });
      return;
    }
    if ((err as { code?: string }).code === "57014" && /statement timeout/.test((err as Error).message)) {
      res.set("Retry-After", "5").status(503).json({
        error: "read_timeout",
        message:
          "the read ran longer than the service's read timeout (STRAGGLER_READ_TIMEOUT) and was stopped: ask for less (a narrower range, a smaller limit)",
      });
      return;
    }
    if (isPoolTimeout(err)) {
      res.set("Retry-After", "1").status(503).json({
        error: "busy",
        message: "no database connection became free in time (the service is busy); retry later",
      });
      return;
    }
    if (isUnavailable(err)) {
      res
        .set("Retry-After", "5")
        .status(503)
        .json({ error: "unavailable", message: "the database is unreachable; retry later" });
      return;
    }
    log.error({ err, method: req.method, path: req.path }, "request failed");
    res.status(500).json({ error: "internal", message: "internal error; see the service log" });
  };
}

/**
 * Answers requests that Node's HTTP parser refuses before express sees them, with a JSON body like
 * every other error (Node's own answer has none): a request line and headers over Node's limit
 * (`http.maxHeaderSize`, 16 KB; a long query string counts) is 431 `header_too_large`, any other
 * malformed request 400 `invalid_request`; the connection is then closed. A reset connection is
 * just closed. Call it once on the listening server.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, body] =
      err.code === "HPE_HEADER_OVERFLOW"
        ? [
            431,
            "Request Header Fields Too Large",
            {
              error: "header_too_large",
              message: `the request line and headers are larger than ${maxHeaderSize} bytes (a query string counts): send a shorter query, e.g. a narrower filter`,
            },
          ]
        : [400, "Bad Request", { error: "invalid_request", message: "the request is not valid HTTP/1.1" }];
    const text = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  });
}
