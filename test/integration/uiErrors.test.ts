/**
 * The pipeline page's answers to requests it cannot serve, without a browser:
 * a page past the last one, a page number out of range, a path whose
 * percent-encoding does not decode (an HTML page under /ui, JSON for the API);
 * a query parameter given twice, on every route that parses a query; and the
 * state label of a pipeline refused for its time zone or a changed policy.
 */
import type { Server } from "node:http";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { answerClientErrors } from "../../src/http/errors.js";
import { runCorrection } from "../../src/correction/correct.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { landStream } from "../../src/ingest/landFile.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline, postedOrders } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "ui-errors-token-0123456789";
const orders = postedOrders("ui-orders");
let api: RunningApi;
/** A calendar window in a zone Node knows and PostgreSQL does not. */
const ZONED = {
  source: { format: "jsonl" },
  fields: { eventTime: "t" },
  window: { type: "tumbling", size: "1 day", timeZone: "US/Pacific-New" },
  watermark: { delay: "5 minutes" },
};

/** The text of the error page's message (`#error-message`), unescaped. */
function errorMessage(page: string): string | undefined {
  const m = /<p class="error" id="error-message">(.*?)<\/p>/s.exec(page);
  return m?.[1]
    ?.replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

beforeAll(async () => {
  const { pool } = await getDb();
  api = await startApi({ pool, pipelines: [orders], log: createLogger("silent"), token: TOKEN });
  // 3 windows: one page of windows.
  const body =
    ["12:01", "12:11", "12:21"]
      .map((t, i) => JSON.stringify({ event_time: `2026-10-01T${t}:00Z`, amount: i + 1 }))
      .join("\n") + "\n";
  const r = await fetch(`${api.base}/pipelines/ui-orders/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" },
    body,
  });
  expect(r.status).toBe(201);
  await runBatch(pool, orders, "once");
});
afterAll(async () => api?.close());

describe("the pipeline page's errors", () => {
  it("a page past the last one is a 400 page naming the last; a page number out of range names the range", async () => {
    const ok = await fetch(`${api.base}/ui/pipelines/ui-orders?page=1`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(
      'Windows <b data-field="windowFirst">1</b>–<b data-field="windowLast">3</b> of <b data-field="windowTotal">3</b>',
    );
    const past = await fetch(`${api.base}/ui/pipelines/ui-orders?page=2`);
    expect([past.status, past.headers.get("content-type"), errorMessage(await past.text())]).toEqual([
      400,
      "text/html; charset=utf-8",
      "query.page: page 2 is past the last page, 1",
    ]);
    for (const page of ["10000000", "0", "1.5", "two"]) {
      const bad = await fetch(`${api.base}/ui/pipelines/ui-orders?page=${page}`);
      expect([page, bad.status, errorMessage(await bad.text())]).toEqual([
        page,
        400,
        "query.page: expected a page number from 1 to 1000000",
      ]);
    }
  });

  it("the lateness section fetched after the page: its markup and chart for 3 rows; an unknown pipeline is a 404, a query a 400", async () => {
    const ok = await fetch(`${api.base}/ui/pipelines/ui-orders/lateness`);
    expect([ok.status, ok.headers.get("content-type")]).toEqual([200, "application/json; charset=utf-8"]);
    const section = (await ok.json()) as {
      html: string;
      chart: { buckets: { count: number }[]; marks: { kind: string }[] };
    };
    expect(section.html).toContain("over 3 accepted rows");
    expect(section.chart.buckets.reduce((n, b) => n + b.count, 0)).toBe(3);
    expect(section.chart.marks.map((m) => m.kind)).toEqual(["configured", "recommended"]);
    const unknown = await fetch(`${api.base}/ui/pipelines/nope/lateness`);
    expect([unknown.status, errorMessage(await unknown.text())]).toEqual([404, 'no pipeline named "nope"']);
    const asked = await fetch(`${api.base}/ui/pipelines/ui-orders/lateness?byKey=true`);
    expect(asked.status).toBe(400);
  });

  it("a path whose percent-encoding does not decode: the HTML 400 page under /ui, a JSON 400 from the API, each saying how to write it", async () => {
    const message =
      'path: "%" is not valid percent-encoding (a % must be followed by two hexadecimal digits of UTF-8; write %25 for a literal %)';
    const ui = await fetch(`${api.base}/ui/pipelines/%`);
    expect([ui.status, ui.headers.get("content-type"), errorMessage(await ui.text())]).toEqual([
      400,
      "text/html; charset=utf-8",
      message,
    ]);
    const rest = await fetch(`${api.base}/pipelines/%/windows`);
    expect([rest.status, await rest.json()]).toEqual([400, { error: "invalid_request", message }]);
  });
});

describe("a query parameter given more than once", () => {
  it("is a 400 naming it and how many times, on the API's reads and the pages; a parameter that takes a list may repeat", async () => {
    const cases: [string, string][] = [
      [
        "/pipelines/ui-orders/windows?from=2026-10-01T12:00:00Z&from=2026-10-01T13:00:00Z",
        "parameter from is given 2 times; give it once",
      ],
      ["/pipelines/ui-orders/windows?key=1&key=2&key=3", "parameter key is given 3 times; give it once"],
      ["/pipelines/ui-orders/lateness?byKey=true&byKey=false", "parameter byKey is given 2 times; give it once"],
      [
        "/pipelines/ui-orders/quarantine?limit=1&limit=2&reason=DUPLICATE&reason=PARSE_FAIL",
        "parameter reason is given 2 times; give it once; parameter limit is given 2 times; give it once",
      ],
      // A parameter the route does not take is named as such, repeated or not.
      ["/pipelines?x=1&x=2", 'query: Unrecognized key: "x"'],
    ];
    for (const [route, message] of cases) {
      const r = await fetch(`${api.base}${route}`);
      expect([route, r.status, await r.json()]).toEqual([route, 400, { error: "invalid_request", message }]);
    }
    const post = await fetch(`${api.base}/pipelines/ui-orders/recompute?dry=1&dry=2`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([post.status, await post.json()]).toEqual([
      400,
      { error: "invalid_request", message: 'query: Unrecognized key: "dry"' },
    ]);
    const page = await fetch(`${api.base}/ui/pipelines/ui-orders?page=1&page=2`);
    expect([page.status, errorMessage(await page.text())]).toEqual([
      400,
      "parameter page is given 2 times; give it once",
    ]);
    // `delay` takes a list: repeating it asks for each delay; a bad one inside the list is named as a bad duration.
    const asked = await fetch(`${api.base}/pipelines/ui-orders/lateness?delay=1%20hour&delay=7200%20seconds`);
    expect(asked.status).toBe(200);
    const bad = await fetch(`${api.base}/pipelines/ui-orders/lateness?delay=1%20hour&delay=soon`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/^query\.delay: /);
  });
});

describe("a request Node's HTTP parser refuses", () => {
  it("a 100 KB query string is 431 with a JSON message (as the service listens), not an empty body", async () => {
    const { pool } = await getDb();
    const app = createApp({ pool, pipelines: [orders], log: createLogger("silent"), token: TOKEN });
    const server: Server = await new Promise((resolve) => {
      const s = app.listen(0, "127.0.0.1", () => resolve(s));
    });
    answerClientErrors(server);
    try {
      const port = (server.address() as { port: number }).port;
      const r = await fetch(`http://127.0.0.1:${port}/pipelines/ui-orders/windows?key=${"k".repeat(100_000)}`);
      expect([r.status, r.headers.get("content-type"), await r.json()]).toEqual([
        431,
        "application/json; charset=utf-8",
        {
          error: "header_too_large",
          message:
            "the request line and headers are larger than 16384 bytes (a query string counts): send a shorter query, e.g. a narrower filter",
        },
      ]);
      // The server goes on answering.
      expect((await fetch(`http://127.0.0.1:${port}/pipelines/ui-orders/windows`)).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe("POST recompute on a pipeline refused for its calendar zone", () => {
  it("is a 409 with the refusal, and no correction run is recorded", async () => {
    const { pool } = await getDb();
    const zoned = pipeline({ ...ZONED, name: "ui-zone" });
    const zoneApi = await startApi({ pool, pipelines: [zoned], log: createLogger("silent"), token: TOKEN });
    try {
      const r = await fetch(`${zoneApi.base}/pipelines/ui-zone/recompute`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect([r.status, await r.json()]).toEqual([
        409,
        {
          error: "policy_refused",
          message:
            'pipeline ui-zone is not streamed: window.timeZone: "US/Pacific-New" is not a time zone PostgreSQL knows (pg_timezone_names); write a zone both Straggler and PostgreSQL know (Straggler reads this one as "America/Los_Angeles")',
        },
      ]);
      expect(
        (await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs WHERE pipeline = 'ui-zone'"))
          .rows[0].n,
      ).toBe(0);
    } finally {
      await zoneApi.close();
    }
  });
});

describe("the state label of a refused pipeline", () => {
  it("says 'refused: time zone' for a zone PostgreSQL does not know and 'refused: policy changed' for a changed policy, on /ui and the pipeline page", async () => {
    const { pool } = await getDb();
    const zoned = pipeline({ ...ZONED, name: "ui-zone-label" });
    const utc = { ...ZONED, name: "ui-changed-label", window: { type: "tumbling", size: "1 day", timeZone: "UTC" } };
    // The 1-day policy live with a window in its results: 1 week is a changed policy with something to invalidate (not adopted).
    const live = pipeline(utc);
    await landStream(pool, live, Readable.from(['{"t":"2026-10-01T12:00:00Z"}\n']), "one-row");
    await runBatch(pool, live, "once");
    await runCorrection(pool, live, { trigger: "cli" });
    const changed = pipeline({ ...utc, window: { ...utc.window, size: "1 week" } });
    const labelApi = await startApi({ pool, pipelines: [zoned, changed], log: createLogger("silent"), token: TOKEN });
    try {
      const list = await (await fetch(`${labelApi.base}/ui`)).text();
      const rows = [
        ...list.matchAll(
          /<tr data-pipeline="([^"]+)">\s*<td>.*?<\/td>\s*<td><span class="badge (\w+)">([^<]*)<\/span>/gs,
        ),
      ].map((m) => [m[1], m[2], m[3]]);
      expect(rows).toEqual([
        ["ui-zone-label", "bad", "refused: time zone"],
        ["ui-changed-label", "bad", "refused: policy changed"],
      ]);
      for (const [name, label] of [
        ["ui-zone-label", "refused: time zone"],
        ["ui-changed-label", "refused: policy changed"],
      ] as const) {
        const page = await (await fetch(`${labelApi.base}/ui/pipelines/${name}`)).text();
        expect(/<span class="badge bad" id="state">([^<]*)<\/span>/.exec(page)?.[1]).toBe(label);
      }
    } finally {
      await labelApi.close();
    }
  });
});
