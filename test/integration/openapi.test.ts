import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { createApp } from "../../src/http/app.js";
import {
  correctionRunResponse, correctionRunRow, failedWindowRow, healthResponse, pipelineStatusRow, progressRow, quarantineResponse, reconcileReport, retractionRow, sourcesResponse, windowRow,
} from "../../src/http/responses.js";
import { holdResponse } from "../../src/http/holdRoutes.js";
import { cutoverResponse, rebuildResponse } from "../../src/http/rebuildRoutes.js";
import { correctionSummary, landResponse } from "../../src/http/schemas.js";
import { latenessResponse } from "../../src/observe/latenessQuery.js";
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
  const stack = (app as unknown as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }).router.stack;
  // The pages for people under /ui are one router (src/ui), not API routes: they are left out of the document.
  const served = stack.flatMap((layer) => (layer.route ? Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`) : [])).sort();
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
      "GET /metrics",
      "GET /openapi.json",
      "GET /pipelines",
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
      "POST /pipelines/:pipeline/cutover",
      "POST /pipelines/:pipeline/events",
      "POST /pipelines/:pipeline/hold",
      "POST /pipelines/:pipeline/rebuild",
      "POST /pipelines/:pipeline/recompute",
      "POST /pipelines/:pipeline/release",
    ]);
  });

  it("gives every documented response, success and error alike, a JSON schema (/metrics: a text one)", async () => {
    const { doc } = await documentOf();
    const withoutSchema = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) =>
        Object.entries(op.responses)
          .filter(([status, r]) => typeof r.content?.[path === "/metrics" && status === "200" ? "text/plain" : "application/json"]?.schema !== "object")
          .map(([status]) => `${method} ${path} ${status}`),
      ),
    );
    expect(withoutSchema).toEqual([]);
    const statuses = Object.fromEntries(Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => [`${method} ${path}`, Object.keys(op.responses).sort()])));
    const reads = ["200", "400", "404", "500", "503"];
    expect(statuses).toEqual({
      "get /health": ["200", "503"],
      "get /metrics": ["200", "500", "503"],
      "get /openapi.json": ["200"],
      "get /pipelines": ["200", "400", "500", "503"],
      "get /pipelines/{pipeline}/windows": reads,
      "get /pipelines/{pipeline}/progress": reads,
      "get /pipelines/{pipeline}/quarantine": reads,
      "get /pipelines/{pipeline}/sources": reads,
      "get /pipelines/{pipeline}/failed-windows": reads,
      "get /pipelines/{pipeline}/retractions": reads,
      "get /pipelines/{pipeline}/corrections": reads,
      "get /pipelines/{pipeline}/corrections/{runId}": reads,
      "get /pipelines/{pipeline}/reconcile": reads,
      "get /pipelines/{pipeline}/lateness": reads,
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
    const pipeline = lateWithinDelay();
    const token = "test-token-0123456789abcdef";
    const api = await startApi({ pool, pipelines: [pipeline], log: createLogger("silent"), token });
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/x-ndjson" };
    try {
      const answers: [string, z.ZodType, unknown][] = [];
      for (const f of ["1.json", "2.json", "3.json"]) {
        const body = readFileSync(path.join(pipeline.source.landingDir!, f), "utf8") + '{"event_time":"never","amount":1}\n';
        answers.push([`events ${f}`, landResponse, await (await fetch(`${api.base}/pipelines/${pipeline.name}/events`, { method: "POST", headers: auth, body })).json()]);
        await runBatch(pool, pipeline, "once");
      }
      const recompute = await fetch(`${api.base}/pipelines/${pipeline.name}/recompute`, { method: "POST", headers: { authorization: auth.authorization } });
      answers.push(["recompute", correctionSummary, await recompute.json()]);
      const hold = await fetch(`${api.base}/pipelines/${pipeline.name}/hold`, { method: "POST", headers: { authorization: auth.authorization, "content-type": "application/json" }, body: JSON.stringify({ reason: "checking" }) });
      answers.push(["hold", z.object({ hold: holdResponse, windows: z.number() }), await hold.json()]);
      answers.push(["held windows", z.array(windowRow), await (await fetch(`${api.base}/pipelines/${pipeline.name}/windows`)).json()]);
      const release = await fetch(`${api.base}/pipelines/${pipeline.name}/release`, { method: "POST", headers: { authorization: auth.authorization } });
      answers.push(["release", holdResponse, await release.json()]);
      const rebuilt = await fetch(`${api.base}/pipelines/${pipeline.name}/rebuild`, { method: "POST", headers: { authorization: auth.authorization } });
      answers.push(["rebuild", rebuildResponse, await rebuilt.json()]);
      const get = async (route: string) => (await fetch(`${api.base}${route}`)).json();
      const base = `/pipelines/${pipeline.name}`;
      const runs = await get(`${base}/corrections`);
      answers.push(
        ["health", healthResponse, await get("/health")],
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
      );
      const cut = await fetch(`${api.base}/pipelines/${pipeline.name}/cutover`, { method: "POST", headers: { authorization: auth.authorization, "content-type": "application/json" }, body: JSON.stringify({ to: 2 }) });
      answers.push(["cutover", cutoverResponse, await cut.json()]);
      const sizes = Object.fromEntries(answers.map(([name, , body]) => [name, Array.isArray(body) ? body.length : typeof body]));
      expect(sizes).toEqual({
        "events 1.json": "object", "events 2.json": "object", "events 3.json": "object", recompute: "object", hold: "object", "held windows": 4, release: "object", rebuild: "object",
        health: "object", pipelines: 1, windows: 4, progress: 3,
        quarantine: "object", sources: "object", "failed-windows": 0, retractions: 0, corrections: 1, "correction run": "object", reconcile: "object",
        lateness: "object", cutover: "object",
      });
      for (const [name, schema, body] of answers) expect([name, schema.parse(body)]).toEqual([name, body]);
      // The pages under /ui answer HTML and are not in the document.
      const page = await fetch(`${api.base}/ui/pipelines/${pipeline.name}`);
      const doc = (await get("/openapi.json")) as Document;
      expect([page.status, page.headers.get("content-type"), Object.keys(doc.paths).filter((p) => p.startsWith("/ui"))]).toEqual([200, "text/html; charset=utf-8", []]);
    } finally {
      await api.close();
    }
  });
});
