import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { createApp } from "../../src/app.js";
import {
  correctionRunResponse,
  correctionRunRow,
  failedWindowRow,
  healthResponse,
  pipelineStatusRow,
  progressRow,
  quarantineResponse,
  reconcileReport,
  retractionRow,
  sourcesResponse,
  windowRow,
} from "../../src/http/responses.js";
import { readinessResponse } from "../../src/http/healthRoutes.js";
import { feedPage } from "../../src/http/feedRoutes.js";
import { holdResponse } from "../../src/http/holdRoutes.js";
import { cutoverResponse, rebuildResponse } from "../../src/http/rebuildRoutes.js";
import { correctionSummary, landResponse } from "../../src/http/schemas.js";
import { latenessResponse } from "../../src/http/latenessQuery.js";
import { explainResponse } from "../../src/http/explainQuery.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { createLogger } from "../../src/log.js";
import { lateWithinDelay } from "../helpers/fixtures.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

async function documentOf(): Promise<{ served: string[]; doc: Document }> {
  const { pool } = await getDb();
  const deps = { pool, pipelines: [lateWithinDelay()], log: createLogger("silent"), token: undefined };
  const app = createApp(deps);
  const stack = (
    app as unknown as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }
  ).router.stack;
  // The pages for people under /ui are one router (src/ui), not API routes: they are left out of the document.
  const served = stack
    .flatMap((layer) =>
      layer.route ? Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`) : [],
    )
    .sort();
  const api = await startApi(deps);
  try {
    const doc = (await (await fetch(`${api.base}/openapi.json`)).json()) as Document;
    return { served, doc };
  } finally {
    await api.close();
  }
}

describe("GET /openapi.json", () => {
  it("documents every route express serves, and only those", async () => {
    const { served, doc } = await documentOf();
    const documented = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`))
      .sort();
    expect(doc.openapi).toBe("3.1.0");
    expect(documented).toEqual(served);
    expect(served).toEqual([
      "GET /health",
      "GET /livez",
      "GET /metrics",
      "GET /openapi.json",
      "GET /pipelines",
      "GET /pipelines/:pipeline/changes",
      "GET /pipelines/:pipeline/changes/stream",
      "GET /pipelines/:pipeline/corrections",
      "GET /pipelines/:pipeline/corrections/:runId",
      "GET /pipelines/:pipeline/failed-windows",
      "GET /pipelines/:pipeline/lateness",
      "GET /pipelines/:pipeline/progress",
      "GET /pipelines/:pipeline/quarantine",
      "GET /pipelines/:pipeline/reconcile",
      "GET /pipelines/:pipeline/retractions",
      "GET /pipelines/:pipeline/sources",
      "GET /pipelines/:pipeline/windows",
      "GET /pipelines/:pipeline/windows/history",
      "GET /readyz",
      "POST /pipelines/:pipeline/cutover",
      "POST /pipelines/:pipeline/events",
      "POST /pipelines/:pipeline/hold",
      "POST /pipelines/:pipeline/rebuild",
      "POST /pipelines/:pipeline/recompute",
      "POST /pipelines/:pipeline/release",
    ]);
  });

  it("gives every documented response, success and error alike, a JSON schema (/metrics: a text one; the change stream: text/event-stream)", async () => {
    const { doc } = await documentOf();
    const withoutSchema = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) =>
        Object.entries(op.responses)
          .filter(([status, r]) => {
            const type =
              status !== "200"
                ? "application/json"
                : path === "/metrics"
                  ? "text/plain"
                  : path.endsWith("/changes/stream")
                    ? "text/event-stream"
                    : "application/json";
            return typeof r.content?.[type]?.schema !== "object";
          })
          .map(([status]) => `${method} ${path} ${status}`),
      ),
    );
    expect(withoutSchema).toEqual([]);
    const statuses = Object.fromEntries(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => [`${method} ${path}`, Object.keys(op.responses).sort()]),
      ),
    );
    const reads = ["200", "400", "401", "404", "500", "503"];
    expect(statuses).toEqual({
      "get /livez": ["200", "400"],
      "get /readyz": ["200", "400", "503"],
      "get /health": ["200", "400", "503"],
      "get /metrics": ["200", "401", "500", "503"],
      "get /openapi.json": ["200", "400"],
      "get /pipelines": ["200", "400", "401", "500", "503"],
      "get /pipelines/{pipeline}/windows": reads,
      "get /pipelines/{pipeline}/windows/history": reads,
      "get /pipelines/{pipeline}/progress": reads,
      "get /pipelines/{pipeline}/quarantine": reads,
      "get /pipelines/{pipeline}/sources": reads,
      "get /pipelines/{pipeline}/failed-windows": reads,
      "get /pipelines/{pipeline}/retractions": reads,
      "get /pipelines/{pipeline}/corrections": reads,
      "get /pipelines/{pipeline}/corrections/{runId}": reads,
      "get /pipelines/{pipeline}/reconcile": ["200", "400", "401", "404", "409", "500", "503"],
      "get /pipelines/{pipeline}/lateness": reads,
      "get /pipelines/{pipeline}/changes": ["200", "400", "401", "404", "409", "410", "500", "503"],
      "get /pipelines/{pipeline}/changes/stream": ["200", "400", "401", "404", "409", "410", "500", "503"],
      "post /pipelines/{pipeline}/events": ["200", "201", "400", "401", "404", "413", "415", "422", "500", "503"],
      "post /pipelines/{pipeline}/recompute": ["200", "400", "401", "404", "409", "415", "500", "503"],
      "post /pipelines/{pipeline}/hold": ["201", "400", "401", "404", "409", "500", "503"],
      "post /pipelines/{pipeline}/rebuild": ["200", "400", "401", "404", "409", "422", "500", "503"],
      "post /pipelines/{pipeline}/cutover": ["200", "400", "401", "404", "409", "500", "503"],
      "post /pipelines/{pipeline}/release": ["200", "400", "401", "404", "409", "500", "503"],
    });
  });

  it("answers as documented: every route's body parses with its response schema, and nothing is left over", async () => {
    const { pool } = await getDb();
    const pipeline = { ...lateWithinDelay(), feed: { enabled: true } };
    const token = "test-token-0123456789abcdef";
    const api = await startApi({ pool, pipelines: [pipeline], log: createLogger("silent"), token });
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson" };
    try {
      const answers: [string, z.ZodType, unknown][] = [];
      for (const f of ["1.json", "2.json", "3.json"]) {
        const body =
          readFileSync(path.join(pipeline.source.landingDir!, f), "utf8") + '{"event_time":"never","amount":1}\n';
        answers.push([
          `events ${f}`,
          landResponse,
          await (
            await fetch(`${api.base}/pipelines/${pipeline.name}/events`, { method: "POST", headers: auth, body })
          ).json(),
        ]);
        await runBatch(pool, pipeline, "once");
      }
      const recompute = await fetch(`${api.base}/pipelines/${pipeline.name}/recompute`, {
        method: "POST",
        headers: { authorization: auth.authorization },
      });
      answers.push(["recompute", correctionSummary, await recompute.json()]);
      const hold = await fetch(`${api.base}/pipelines/${pipeline.name}/hold`, {
        method: "POST",
        headers: { authorization: auth.authorization, "content-type": "application/json" },
        body: JSON.stringify({ reason: "checking" }),
      });
      answers.push(["hold", z.object({ hold: holdResponse, windows: z.number() }), await hold.json()]);
      answers.push([
        "held windows",
        z.array(windowRow),
        await (await fetch(`${api.base}/pipelines/${pipeline.name}/windows`)).json(),
      ]);
      const release = await fetch(`${api.base}/pipelines/${pipeline.name}/release`, {
        method: "POST",
        headers: { authorization: auth.authorization },
      });
      answers.push(["release", holdResponse, await release.json()]);
      const rebuilt = await fetch(`${api.base}/pipelines/${pipeline.name}/rebuild`, {
        method: "POST",
        headers: { authorization: auth.authorization },
      });
      answers.push(["rebuild", rebuildResponse, await rebuilt.json()]);
      const get = async (route: string) => (await fetch(`${api.base}${route}`)).json();
      const base = `/pipelines/${pipeline.name}`;
      const runs = await get(`${base}/corrections`);
      answers.push(
        ["health", healthResponse, await get("/health")],
        ["livez", z.object({ status: z.literal("ok") }).strict(), await get("/livez")],
        ["readyz", readinessResponse, await get("/readyz")],
        ["pipelines", z.array(pipelineStatusRow), await get("/pipelines")],
        ["windows", z.array(windowRow), await get(`${base}/windows`)],
        ["progress", z.array(progressRow), await get(`${base}/progress`)],
        ["quarantine", quarantineResponse, await get(`${base}/quarantine`)],
        ["sources", sourcesResponse, await get(`${base}/sources`)],
        ["failed-windows", z.array(failedWindowRow), await get(`${base}/failed-windows`)],
        ["retractions", z.array(retractionRow), await get(`${base}/retractions`)],
        ["corrections", z.array(correctionRunRow), runs],
        ["correction run", correctionRunResponse, await get(`${base}/corrections/${runs[0].run_id}`)],
        ["reconcile", reconcileReport, await get(`${base}/reconcile`)],
        ["lateness", latenessResponse, await get(`${base}/lateness?byKey=true&delay=1%20minute`)],
        ["window history", explainResponse, await get(`${base}/windows/history?start=2026-10-01T12:00:00Z`)],
        ["changes", feedPage, await get(`${base}/changes`)],
      );
      const cut = await fetch(`${api.base}/pipelines/${pipeline.name}/cutover`, {
        method: "POST",
        headers: { authorization: auth.authorization, "content-type": "application/json" },
        body: JSON.stringify({ to: 2 }),
      });
      answers.push(["cutover", cutoverResponse, await cut.json()]);
      const sizes = Object.fromEntries(
        answers.map(([name, , body]) => [name, Array.isArray(body) ? body.length : typeof body]),
      );
      expect(sizes).toEqual({
        "events 1.json": "object",
        "events 2.json": "object",
        "events 3.json": "object",
        recompute: "object",
        hold: "object",
        "held windows": 4,
        release: "object",
        rebuild: "object",
        health: "object",
        livez: "object",
        readyz: "object",
        pipelines: 1,
        windows: 4,
        progress: 3,
        quarantine: "object",
        sources: "object",
        "failed-windows": 0,
        retractions: 0,
        corrections: 1,
        "correction run": "object",
        reconcile: "object",
        lateness: "object",
        "window history": "object",
        changes: "object",
        cutover: "object",
      });
      for (const [name, schema, body] of answers) expect([name, schema.parse(body)]).toEqual([name, body]);
      // Every value of a property the document marks date-time is an RFC 3339 instant in UTC.
      const dateTimeNames = new Set<string>();
      const collect = (o: unknown): void => {
        if (Array.isArray(o)) return o.forEach(collect);
        if (o === null || typeof o !== "object") return;
        for (const [k, v] of Object.entries(
          (o as { properties?: Record<string, { format?: string }> }).properties ?? {},
        ))
          if (v.format === "date-time") dateTimeNames.add(k);
        Object.values(o).forEach(collect);
      };
      collect((await get("/openapi.json")) as Document);
      const instants: string[] = [];
      const scan = (o: unknown): void => {
        if (Array.isArray(o)) return o.forEach(scan);
        if (o === null || typeof o !== "object") return;
        for (const [k, v] of Object.entries(o)) {
          if (dateTimeNames.has(k) && typeof v === "string") instants.push(v);
          scan(v);
        }
      };
      for (const [, , body] of answers) scan(body);
      // 20 of them in the change feed's 8 changes: windowStart and windowEnd of 6 window changes, `at` of all 8 (2 hold markers).
      expect(instants.length).toBe(128);
      expect(instants.filter((v) => !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(v))).toEqual([]);
      // The pages under /ui answer HTML and are not in the document.
      const page = await fetch(`${api.base}/ui/pipelines/${pipeline.name}`);
      const doc = (await get("/openapi.json")) as Document;
      expect([
        page.status,
        page.headers.get("content-type"),
        Object.keys(doc.paths).filter((p) => p.startsWith("/ui")),
      ]).toEqual([200, "text/html; charset=utf-8", []]);
    } finally {
      await api.close();
    }
  });
});

type Op = Operation & { operationId?: string; security?: Record<string, string[]>[] };

describe("the OpenAPI document as linters read it", () => {
  it("names every operation once, declares every operation's security, and has servers, components and the alert webhook", async () => {
    const { doc } = await documentOf();
    const full = doc as unknown as Document & {
      servers: unknown;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
      webhooks: Record<string, Record<string, Op>>;
    };
    const ops = Object.entries(full.paths).flatMap(([path, o]) =>
      Object.entries(o).map(([method, op]) => [`${method} ${path}`, op as Op] as const),
    );
    const ids = ops.map(([, op]) => op.operationId);
    expect(new Set(ids).size).toBe(25);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    const security = Object.fromEntries(ops.map(([name, op]) => [name, JSON.stringify(op.security)]));
    const open = "[]";
    const read = '[{},{"bearer":[]}]';
    const write = '[{"bearer":[]}]';
    expect(security).toEqual({
      "get /livez": open,
      "get /readyz": open,
      "get /health": open,
      "get /openapi.json": open,
      "get /metrics": read,
      "get /pipelines": read,
      "get /pipelines/{pipeline}/windows": read,
      "get /pipelines/{pipeline}/windows/history": read,
      "get /pipelines/{pipeline}/progress": read,
      "get /pipelines/{pipeline}/quarantine": read,
      "get /pipelines/{pipeline}/sources": read,
      "get /pipelines/{pipeline}/failed-windows": read,
      "get /pipelines/{pipeline}/retractions": read,
      "get /pipelines/{pipeline}/corrections": read,
      "get /pipelines/{pipeline}/corrections/{runId}": read,
      "get /pipelines/{pipeline}/reconcile": read,
      "get /pipelines/{pipeline}/lateness": read,
      "get /pipelines/{pipeline}/changes": read,
      "get /pipelines/{pipeline}/changes/stream": read,
      "post /pipelines/{pipeline}/events": write,
      "post /pipelines/{pipeline}/recompute": write,
      "post /pipelines/{pipeline}/hold": write,
      "post /pipelines/{pipeline}/release": write,
      "post /pipelines/{pipeline}/rebuild": write,
      "post /pipelines/{pipeline}/cutover": write,
    });
    expect(full.servers).toEqual([
      { url: "/", description: "the service that serves this document (`straggler serve`, PORT, default 8080)" },
    ]);
    expect(Object.keys(full.components.schemas).sort()).toEqual(["Aggregate", "AlertChange", "Error", "WindowChange"]);
    expect(Object.keys(full.components.securitySchemes)).toEqual(["bearer"]);
    const text = JSON.stringify(doc);
    // Every error answer refers to the one Error schema.
    expect(text.split('"$ref":"#/components/schemas/Error"').length - 1).toBe(
      ops.reduce((n, [, op]) => n + Object.keys(op.responses).filter((s) => Number(s) >= 400).length, 0) - 2,
    ); // less the 503s of /health and /readyz: probe answers, not errors
    expect(Object.keys(full.webhooks)).toEqual(["alertChange"]);
    const hook = full.webhooks.alertChange!.post! as Op & {
      requestBody: { content: Record<string, { schema: unknown }> };
    };
    expect([
      hook.operationId,
      hook.requestBody.content["application/json"]!.schema,
      Object.keys(hook.responses).sort(),
    ]).toEqual(["alertChange", { $ref: "#/components/schemas/AlertChange" }, ["2XX", "429", "4XX", "5XX"]]);
  });

  it("marks every instant the API answers as format date-time", async () => {
    const { doc } = await documentOf();
    // Every string property whose name says it is an instant, and how many have format date-time.
    const instantName =
      /(^|_)(at|time|start|end|since|seen|slot|until|mtime|timestamp|watermark)($|_)|Time$|At$|Start$|End$|^since$|^watermark$|^(from|to)$|mtime|_avg$|_min$|_max$/;
    const seen: Record<string, number> = {};
    const walk = (o: unknown): void => {
      if (Array.isArray(o)) return o.forEach(walk);
      if (o === null || typeof o !== "object") return;
      const s = o as { properties?: Record<string, { type?: string | string[]; format?: string }> };
      for (const [name, p] of Object.entries(s.properties ?? {})) {
        const types = Array.isArray(p.type) ? p.type : [p.type];
        if (types.includes("string") && instantName.test(name) && !/^(value|sum|min|max)_/.test(name))
          seen[`${name} ${p.format ?? "-"}`] = (seen[`${name} ${p.format ?? "-"}`] ?? 0) + 1;
      }
      Object.values(o).forEach(walk);
    };
    walk(doc);
    expect(Object.keys(seen).filter((k) => !k.endsWith(" date-time"))).toEqual([]);
    expect(Object.values(seen).reduce((a, b) => a + b, 0)).toBe(110); // WindowChange's windowStart, windowEnd and at among them
  });
});

describe("methods and challenges", () => {
  it("answers a documented path asked with another method 405 with Allow, an unknown path 404", async () => {
    const { pool } = await getDb();
    const pipeline = lateWithinDelay();
    const api = await startApi({
      pool,
      pipelines: [pipeline],
      log: createLogger("silent"),
      token: "test-token-0123456789abcdef",
    });
    try {
      const answers = [];
      for (const [method, route] of [
        ["POST", "/health"],
        ["DELETE", "/pipelines"],
        ["PUT", `/pipelines/${pipeline.name}/windows`],
        ["GET", `/pipelines/${pipeline.name}/events`],
        ["PATCH", `/pipelines/${pipeline.name}/corrections/7`],
        ["DELETE", "/pipelines/no-such-pipeline/hold"],
        ["POST", "/nowhere"],
        ["GET", `/pipelines/${pipeline.name}/windows/extra`],
      ] as const) {
        const r = await fetch(`${api.base}${route}`, { method });
        answers.push([method, route, r.status, r.headers.get("allow"), await r.json()]);
      }
      const options = await fetch(`${api.base}/pipelines/${pipeline.name}/recompute`, { method: "OPTIONS" });
      expect([options.status, options.headers.get("allow"), await options.text()]).toEqual([204, "POST", ""]);
      const name = pipeline.name;
      expect(answers).toEqual([
        [
          "POST",
          "/health",
          405,
          "GET, HEAD",
          {
            error: "method_not_allowed",
            message: "POST is not answered at /health; it answers GET, HEAD (see GET /openapi.json)",
          },
        ],
        [
          "DELETE",
          "/pipelines",
          405,
          "GET, HEAD",
          {
            error: "method_not_allowed",
            message: "DELETE is not answered at /pipelines; it answers GET, HEAD (see GET /openapi.json)",
          },
        ],
        [
          "PUT",
          `/pipelines/${name}/windows`,
          405,
          "GET, HEAD",
          {
            error: "method_not_allowed",
            message:
              "PUT is not answered at /pipelines/{pipeline}/windows; it answers GET, HEAD (see GET /openapi.json)",
          },
        ],
        [
          "GET",
          `/pipelines/${name}/events`,
          405,
          "POST",
          {
            error: "method_not_allowed",
            message: "GET is not answered at /pipelines/{pipeline}/events; it answers POST (see GET /openapi.json)",
          },
        ],
        [
          "PATCH",
          `/pipelines/${name}/corrections/7`,
          405,
          "GET, HEAD",
          {
            error: "method_not_allowed",
            message:
              "PATCH is not answered at /pipelines/{pipeline}/corrections/{runId}; it answers GET, HEAD (see GET /openapi.json)",
          },
        ],
        [
          "DELETE",
          "/pipelines/no-such-pipeline/hold",
          405,
          "POST",
          {
            error: "method_not_allowed",
            message: "DELETE is not answered at /pipelines/{pipeline}/hold; it answers POST (see GET /openapi.json)",
          },
        ],
        ["POST", "/nowhere", 404, null, { error: "not_found", message: "no such route; see GET /openapi.json" }],
        [
          "GET",
          `/pipelines/${name}/windows/extra`,
          404,
          null,
          { error: "not_found", message: "no such route; see GET /openapi.json" },
        ],
      ]);
    } finally {
      await api.close();
    }
  });

  it("answers 401 with WWW-Authenticate: Bearer (reads under STRAGGLER_READ_TOKEN, writes), and a query parameter on /health is a 400", async () => {
    const { pool } = await getDb();
    const pipeline = lateWithinDelay();
    const api = await startApi({
      pool,
      pipelines: [pipeline],
      log: createLogger("silent"),
      token: "write-token-0123456789abcdef",
      readToken: "read-token-0123456789abcdef",
    });
    try {
      const answers = [];
      for (const [method, route, authorization] of [
        ["GET", "/pipelines", undefined],
        ["GET", "/metrics", "Bearer wrong"],
        ["POST", `/pipelines/${pipeline.name}/release`, undefined],
        ["POST", `/pipelines/${pipeline.name}/release`, "Bearer wrong"],
        ["GET", "/pipelines", "Bearer read-token-0123456789abcdef"],
        ["GET", "/health?verbose=1", undefined],
      ] as const) {
        const r = await fetch(`${api.base}${route}`, {
          method,
          headers: authorization === undefined ? {} : { authorization },
        });
        const body = (await r.json()) as { error?: string; message?: string };
        answers.push([
          method,
          route,
          r.status,
          r.headers.get("www-authenticate"),
          body.message ?? (Array.isArray(body) ? "a list" : "?"),
        ]);
      }
      expect(answers).toEqual([
        [
          "GET",
          "/pipelines",
          401,
          'Bearer realm="straggler"',
          "reads need 'Authorization: Bearer <token>' (STRAGGLER_READ_TOKEN is set)",
        ],
        ["GET", "/metrics", 401, 'Bearer realm="straggler", error="invalid_token"', "invalid token"],
        [
          "POST",
          `/pipelines/${pipeline.name}/release`,
          401,
          'Bearer realm="straggler"',
          "missing 'Authorization: Bearer <token>' header",
        ],
        [
          "POST",
          `/pipelines/${pipeline.name}/release`,
          401,
          'Bearer realm="straggler", error="invalid_token"',
          "invalid token",
        ],
        ["GET", "/pipelines", 200, null, "a list"],
        ["GET", "/health?verbose=1", 400, null, 'query: Unrecognized key: "verbose"'],
      ]);
    } finally {
      await api.close();
    }
  });
});
