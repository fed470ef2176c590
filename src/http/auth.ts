/**
 * Bearer-token guard for mutating routes. The token comes from
 * `STRAGGLER_API_TOKEN`; it is compared in constant time (SHA-256 digests of
 * equal length through `timingSafeEqual`, so the length leaks nothing either).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { HttpError } from "./errors.js";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** True when `presented` equals `expected`, in time independent of where they differ. */
export function tokensEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/**
 * A 401 `unauthorized` with its `WWW-Authenticate` challenge (RFC 9110 §11.6.1: a 401 carries one;
 * RFC 6750 §3 for Bearer): `Bearer realm="straggler"`, plus `error="invalid_token"` when a token was
 * presented and is wrong.
 */
export function unauthorized(message: string, invalidToken = false): HttpError {
  const challenge = `Bearer realm="straggler"${invalidToken ? ', error="invalid_token"' : ""}`;
  return new HttpError(401, "unauthorized", message, { headers: { "WWW-Authenticate": challenge } });
}

export function requireToken(token: string | undefined) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (token === undefined) {
      next(
        unauthorized(
          "mutating routes are disabled: set STRAGGLER_API_TOKEN (16+ characters) in the service's environment and send it as 'Authorization: Bearer <token>'",
        ),
      );
      return;
    }
    const header = req.get("authorization") ?? "";
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m) {
      next(unauthorized("missing 'Authorization: Bearer <token>' header"));
      return;
    }
    if (!tokensEqual(m[1]!, token)) {
      next(unauthorized("invalid token", true));
      return;
    }
    next();
  };
}
