/**
 * The pipeline pages in headless Chromium (Debian's `chromium`, driven by
 * playwright-core): after a known workload (3,020 windows over 150 keys, one
 * (event, window) pair dropped by the watermark, one row quarantined), the
 * pages load without console errors, the charts draw, the numbers shown are
 * the API's, the windows filter and pager work, and a recompute with the
 * token corrects the dropped pair's window. A screenshot is saved.
 */
import { existsSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "test-token-0123456789abcdef";
const getDb = useTestDatabase();

const shop = pipeline({
  name: "shop",
  source: { format: "jsonl" },
  fields: { eventTime: "t", ingestionTime: "arrived", groupKey: ["k"], value: "v" },
  timestamps: { format: "iso8601" },
  window: { type: "tumbling", size: "1 minute" },
  watermark: { delay: "2 minutes" },
  alerts: { dropShare: { above: "50%", batches: 10 } },
});

/** A pipeline that has seen nothing yet. */
const idle = pipeline({
  name: "idle",
  source: { format: "jsonl" },
  fields: { eventTime: "t" },
  timestamps: { format: "iso8601" },
  window: { type: "tumbling", size: "1 minute" },
  watermark: { delay: "0 seconds" },
});

const T0 = Date.parse("2026-03-01T00:00:00Z");
const KEYS = Array.from({ length: 150 }, (_, i) => `k${String(i).padStart(3, "0")}`);
const at = (ms: number) => new Date(ms).toISOString();
/** The value of key number `k` in minute `m`: exact in numeric, two decimals. */
const valueOf = (k: number, m: number) => ((k * 7 + m) % 50) + 0.25;
/** One row per key and minute at :30, arriving 10–59 s later. */
function minutes(from: number, to: number, keys = KEYS) {
  return keys.flatMap((k, i) =>
    Array.from({ length: to - from }, (_, j) => {
      const t = T0 + (from + j) * 60_000 + 30_000;
      return { t: at(t), arrived: at(t + (10 + (i % 50)) * 1000), k, v: valueOf(i, from + j) };
    }),
  );
}

let api: RunningApi;
let browser: Browser;
const shots = mkdtempSync(path.join(tmpdir(), "straggler-ui-"));

async function post(route: string, body: string, headers: Record<string, string>) {
  return fetch(`${api.base}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    body,
  });
}
const getJson = async (route: string) => {
  const r = await fetch(`${api.base}${route}`);
  expect(r.status).toBe(200);
  return r.json();
};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: the browser test needs Debian's chromium package (apt-get install -y chromium; .ci/run installs it)`,
    );
  }
  const { pool } = await getDb();
  api = await startApi({ pool, pipelines: [shop, idle], log: createLogger("silent"), token: TOKEN });
  const land = async (rows: object[], extra = "") => {
    const r = await post("/pipelines/shop/events", rows.map((r) => JSON.stringify(r)).join("\n") + "\n" + extra, {
      "content-type": "application/x-ndjson",
    });
    expect(r.status).toBe(201);
    await runBatch(pool, shop, "once");
  };
  // Batch 1: minutes 0-9 for 150 keys; the watermark moves to 00:07:30.
  await land(minutes(0, 10));
  // Batch 2: minutes 10-19, and k003's row of minute 1 arriving 18 minutes late: its window
  // ended at 00:02, at or before the watermark, so the pair is dropped (and marked for correction).
  const late = { t: at(T0 + 75_000), arrived: at(T0 + 19 * 60_000 + 45_000), k: "k003", v: 100 };
  await land([...minutes(10, 20), late]);
  // Batch 3: minutes 20-21 for ten keys, and a row whose event time does not parse (quarantined).
  await land(
    minutes(20, 22, KEYS.slice(0, 10)),
    JSON.stringify({ t: "never", arrived: at(T0), k: "k001", v: 1 }) + "\n",
  );
  browser = await chromium.launch({ executablePath: CHROMIUM });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

/** A page that records console errors, uncaught exceptions and failed requests. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  return { page, problems };
}

const text = async (page: Page, selector: string) => (await page.locator(selector).first().textContent())?.trim();
/** The lateness section is fetched after the page: wait until it is filled (navigating earlier would abort its request). */
const latenessLoaded = (page: Page) => page.waitForSelector('#lateness[data-state="loaded"]', { state: "attached" });
const num = (s: string | undefined) => Number((s ?? "").replace(/,/g, ""));

describe("the pipeline pages in Chromium", () => {
  it("lists the pipelines with the API's state", async () => {
    const { page, problems } = await openPage();
    const res = await page.goto(`${api.base}/ui`);
    expect(res?.status()).toBe(200);
    const [status] = await getJson("/pipelines");
    const row = `tr[data-pipeline="shop"]`;
    // Its late trip's window awaits correction: the badge says so beside "up to date".
    expect([status.policy.state, status.windows.awaitingCorrection, await text(page, `${row} .badge`)]).toEqual([
      "live",
      1,
      "up to date · 1 awaiting correction",
    ]);
    expect(await text(page, `${row} [data-field="watermark"]`)).toBe(status.watermark);
    expect(await text(page, `${row} [data-field="maxEventTime"]`)).toBe(status.maxEventTime);
    expect(num(await text(page, `${row} [data-field="numRowsDroppedByWatermark"]`))).toBe(1);
    expect(num(await text(page, `${row} [data-field="awaitingCorrection"]`))).toBe(1);
    expect(num(await text(page, `${row} [data-field="open"]`))).toBe(status.windows.open);
    expect(num(await text(page, `${row} [data-field="final"]`))).toBe(status.windows.final);
    expect(num(await text(page, `${row} [data-field="quarantined"]`))).toBe(1);
    await page.click(`${row} a`);
    await page.waitForURL(`${api.base}/ui/pipelines/shop`);
    await latenessLoaded(page);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows the API's numbers, draws the charts, filters and pages the windows", async () => {
    const { page, problems } = await openPage();
    const res = await page.goto(`${api.base}/ui/pipelines/shop`);
    expect(res?.status()).toBe(200);
    await latenessLoaded(page);
    const [status] = await getJson("/pipelines");
    expect(status.watermark).toBe("2026-03-01T00:19:30.000Z");
    const field = (name: string) => text(page, `#overview [data-field="${name}"]`);
    expect(await field("watermark")).toBe(status.watermark);
    expect(await field("maxEventTime")).toBe(status.maxEventTime);
    expect(num(await field("numRowsDroppedByWatermark"))).toBe(status.numRowsDroppedByWatermark);
    expect(num(await field("landed"))).toBe(status.ledger.landed);
    expect(num(await field("accepted"))).toBe(status.ledger.accepted);
    expect(num(await field("quarantined"))).toBe(status.ledger.quarantined);
    expect(num(await field("windowsOpen"))).toBe(status.windows.open);
    expect(num(await field("windowsFinal"))).toBe(status.windows.final);
    expect(num(await field("awaitingCorrection"))).toBe(status.windows.awaitingCorrection);
    const [lastBatch] = await getJson("/pipelines/shop/progress?limit=1");
    expect(num(await field("batchId"))).toBe(lastBatch.batch_id);
    expect([status.ledger.landed, status.ledger.quarantined, status.numRowsDroppedByWatermark]).toEqual([3022, 1, 1]);
    expect(await page.locator(`#alerts tr[data-alert="drop_share"]`).count()).toBe(1);

    // Charts: six uPlot instances, each with a canvas of non-zero size and the batches' data.
    const charts = await page.evaluate(() => {
      const all = (window as unknown as { stragglerCharts: Record<string, { data: unknown[][]; root: HTMLElement }> })
        .stragglerCharts;
      return Object.fromEntries(
        Object.entries(all).map(([name, u]) => {
          const canvas = u.root.querySelector("canvas")!;
          return [name, { points: u.data[0]!.length, width: canvas.width, height: canvas.height }];
        }),
      );
    });
    expect(Object.keys(charts).sort()).toEqual([
      "dropped",
      "duration",
      "eventTime",
      "lateness",
      "quarantined",
      "rates",
    ]);
    for (const [name, c] of Object.entries(charts)) {
      expect([name, c.width > 200, c.height > 100]).toEqual([name, true, true]);
      expect([name, c.points]).toEqual([name, name === "lateness" ? 11 : 3]);
    }
    const series = await page.evaluate(() => {
      const all = (window as unknown as { stragglerCharts: Record<string, { data: unknown[][] }> }).stragglerCharts;
      return {
        dropped: all.dropped!.data[1],
        quarantined: all.quarantined!.data.slice(1),
        lateness: all.lateness!.data[1],
        eventTime: all.eventTime!.data.map((d) => d.at(-1)),
      };
    });
    // The last batch: max event time so far, the watermark, its newest event (null: not behind the max), the gap (s) = GET /pipelines' lag.
    const s = (iso: string) => Date.parse(iso) / 1000;
    expect(series.eventTime).toEqual([
      lastBatch.batch_id,
      s(status.maxEventTime),
      s(status.watermark),
      null,
      status.watermarkLagMs / 1000,
    ]);
    expect(status.watermarkLagMs).toBe(120_000);
    const progress = (await getJson("/pipelines/shop/progress")).reverse();
    expect(series.dropped).toEqual(
      progress.map((p: { num_rows_dropped_by_watermark: number }) => p.num_rows_dropped_by_watermark),
    );
    expect(series.dropped).toEqual([0, 1, 0]);
    expect(series.quarantined).toEqual([[0, 0, 1]]);
    // Lateness: 10-59 s (bucket 10 s-1 min) for every accepted row but the late one (18 min 30 s: 10 min-1 h).
    expect((series.lateness as number[]).reduce((a, b) => a + b, 0)).toBe(3021);
    expect(series.lateness).toEqual([0, 0, 0, 3020, 0, 1, 0, 0, 0, 0, 0]);
    expect(await text(page, `[data-field="configuredDelay"]`)).toBe("2m");
    expect(num(await text(page, `[data-field="configuredDroppedPairs"]`))).toBe(1);

    // The windows table: the total is the API's, 100 rows a page.
    const windowTotal = status.windows.open + status.windows.final + status.windows.corrected;
    expect(windowTotal).toBe(3020);
    expect(num(await text(page, `[data-field="windowTotal"]`))).toBe(3020);
    expect(await page.locator("#window-table tbody tr").count()).toBe(100);
    await page.click("text=next →");
    await page.waitForURL(/page=2/);
    await latenessLoaded(page);
    expect([
      num(await text(page, `[data-field="windowFirst"]`)),
      num(await text(page, `[data-field="windowLast"]`)),
    ]).toEqual([101, 200]);
    const apiPage2 = (await getJson("/pipelines/shop/windows?limit=200")).slice(100);
    expect(await page.locator("#window-table tbody tr td:nth-child(1)").allTextContents()).toEqual(
      apiPage2.map((w: { group_key: string }) => w.group_key),
    );

    // Filter by key and time through the form: the rows are the API's, values and all.
    await page.fill('#window-filter input[name="key"]', "k007");
    await page.fill('#window-filter input[name="from"]', "2026-03-01T00:03:00Z");
    await page.fill('#window-filter input[name="to"]', "2026-03-01T00:05:00Z");
    await page.click('#window-filter button[type="submit"]');
    await page.waitForURL(/key=k007/);
    await latenessLoaded(page);
    const filtered = await getJson(
      "/pipelines/shop/windows?key=k007&from=2026-03-01T00:03:00Z&to=2026-03-01T00:05:00Z",
    );
    expect(filtered.map((w: { value_sum: string }) => Number(w.value_sum))).toEqual([valueOf(7, 3), valueOf(7, 4)]);
    const rows = await page
      .locator("#window-table tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent!.trim())));
    expect(rows.map((r) => [r[0], r[1], r[3], r[7]])).toEqual(
      filtered.map((w: { group_key: string; window_start: string; status: string; value_sum: string }) => [
        w.group_key,
        w.window_start,
        w.status,
        w.value_sum,
      ]),
    );
    expect(num(await text(page, `[data-field="windowTotal"]`))).toBe(2);

    await page.screenshot({ path: path.join(shots, "pipeline.png"), fullPage: true });
    expect(statSync(path.join(shots, "pipeline.png")).size).toBeGreaterThan(20_000);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("runs a recompute with the token typed in the page, and shows the corrected window", async () => {
    const { page, problems } = await openPage();
    await page.goto(`${api.base}/ui/pipelines/shop?key=k003&from=2026-03-01T00:01:00Z&to=2026-03-01T00:02:00Z`);
    await latenessLoaded(page);
    const before = await page
      .locator("#window-table tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent!.trim())));
    expect(before.map((r) => [r[0], r[3], r[4], r[5], r[7]])).toEqual([
      ["k003", "final", "1", "yes", String(valueOf(3, 1))],
    ]);

    // A wrong token: the API's 401 is shown, nothing runs.
    await page.fill("#token", "not-the-token-at-all");
    await page.click("#recompute-button");
    await expect.poll(() => text(page, "#action-answer")).toContain("HTTP 401");
    expect(await getJson("/pipelines/shop/corrections")).toEqual([]);
    expect(problems).toEqual([
      "console error: Failed to load resource: the server responded with a status of 401 (Unauthorized)",
    ]);
    problems.length = 0;

    await page.fill("#token", TOKEN);
    await page.click("#recompute-button");
    await expect.poll(() => text(page, "#action-answer")).toContain("HTTP 200");
    const [run] = await getJson("/pipelines/shop/corrections");
    expect([run.status, run.windows_changed, run.events_recovered]).toEqual(["succeeded", 1, 1]);
    expect(await text(page, "#action-answer")).toContain(
      `run ${run.run_id} succeeded: 1 windows examined, 1 changed, 1 events recovered`,
    );
    // The token stays in this tab: a reload needs no typing.
    expect(await page.evaluate(() => sessionStorage.getItem("straggler.token"))).toBe(TOKEN);

    await page.reload();
    await latenessLoaded(page);
    const after = await page
      .locator("#window-table tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent!.trim())));
    const [window] = await getJson(
      "/pipelines/shop/windows?key=k003&from=2026-03-01T00:01:00Z&to=2026-03-01T00:02:00Z",
    );
    expect([window.status, window.revision, window.awaiting_correction, window.value_sum]).toEqual([
      "corrected",
      2,
      false,
      "122.25",
    ]);
    expect(after.map((r) => [r[0], r[3], r[4], r[5], r[7]])).toEqual([["k003", "corrected", "2", "no", "122.25"]]);
    expect(num(await text(page, `#overview [data-field="windowsCorrected"]`))).toBe(1);
    expect(num(await text(page, `#overview [data-field="awaitingCorrection"]`))).toBe(0);
    expect(await text(page, `#correction-runs tr[data-run="${run.run_id}"] td:nth-child(3)`)).toBe("succeeded");
    await page.click(`details.changes[data-run="${run.run_id}"] summary`);
    const change = await page.locator(`details.changes[data-run="${run.run_id}"] tbody tr td`).allTextContents();
    expect(change.map((c) => c.trim())).toEqual([
      "k003",
      "2026-03-01T00:01:00.000Z",
      "1 → 2",
      "1 events, sum 22.25",
      "2 events, sum 122.25",
      "1",
    ]);

    // Again, with the token kept in the tab and the field empty: nothing awaits correction now.
    await page.click("#recompute-button");
    await expect.poll(() => text(page, "#action-answer")).toContain("0 changed");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a pipeline that has seen nothing yet", async () => {
    const { page, problems } = await openPage();
    await page.goto(`${api.base}/ui`);
    expect(await text(page, `tr[data-pipeline="idle"] .badge`)).toBe("not started");
    expect(await text(page, `tr[data-pipeline="idle"] [data-field="watermark"]`)).toBe("-");
    const res = await page.goto(`${api.base}/ui/pipelines/idle`);
    expect(res?.status()).toBe(200);
    await latenessLoaded(page);
    expect(await text(page, "#batches .note")).toBe("No micro-batch yet.");
    expect(await text(page, "#window-count")).toContain("No window matches.");
    expect(await text(page, "#no-lateness")).toBe("No accepted row yet: nothing to measure.");
    expect(
      await page.evaluate(() => Object.keys((window as unknown as { stragglerCharts: object }).stragglerCharts)),
    ).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("holds and releases the published windows with the token kept in the tab", async () => {
    const { page, problems } = await openPage();
    await page.goto(`${api.base}/ui/pipelines/shop`);
    await latenessLoaded(page);
    await page.fill("#token", TOKEN);
    // No reason: the page asks for one and sends nothing.
    await page.click("#hold-button");
    expect(await text(page, "#action-answer")).toBe(
      "Give a reason for the hold: it is kept with it and shown while the pipeline is held.",
    );
    await page.fill("#hold-reason", "checking a <late> source");
    await Promise.all([page.waitForEvent("load"), page.click("#hold-button")]);
    await latenessLoaded(page);
    const [held] = await getJson("/pipelines");
    expect([held.hold.reason, held.hold.rule]).toEqual(["checking a <late> source", null]);
    expect(await text(page, "#state")).toBe(`held since ${held.hold.heldAt} (checking a <late> source) · up to date`);
    expect(await text(page, '#hold [data-field="holdReason"]')).toBe("checking a <late> source");
    expect(await page.locator("#hold-button").isDisabled()).toBe(true);
    await Promise.all([page.waitForEvent("load"), page.click("#release-button")]);
    await latenessLoaded(page);
    const [released] = await getJson("/pipelines");
    expect(released.hold).toBe(null);
    expect([
      await text(page, "#state"),
      await page.locator("#hold").count(),
      await page.locator("#release-button").isDisabled(),
    ]).toEqual(["up to date", 0, true]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a key that looks like markup as text", async () => {
    const { pool } = await getDb();
    const key = `<img id="injected" src="x" onerror="document.title='pwned'">"'&`;
    const row = { t: at(T0 + 22 * 60_000 + 30_000), arrived: at(T0 + 22 * 60_000 + 40_000), k: key, v: 1 };
    expect(
      (await post("/pipelines/shop/events", JSON.stringify(row) + "\n", { "content-type": "application/x-ndjson" }))
        .status,
    ).toBe(201);
    await runBatch(pool, shop, "once");
    const { page, problems } = await openPage();
    await page.goto(`${api.base}/ui/pipelines/shop?${new URLSearchParams({ key })}`);
    await latenessLoaded(page);
    expect(await page.locator("#window-table tbody tr td:nth-child(1)").allTextContents()).toEqual([key]);
    expect(await page.locator('#window-filter input[name="key"]').inputValue()).toBe(key);
    expect([await page.locator("#injected").count(), await page.title()]).toEqual([0, "shop · Straggler"]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("answers a bad filter or an unknown pipeline with a page naming the problem", async () => {
    const { page } = await openPage();
    let res = await page.goto(`${api.base}/ui/pipelines/shop?from=yesterday`);
    expect(res?.status()).toBe(400);
    expect(await text(page, "#error-message")).toBe(
      "query.from: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z",
    );
    res = await page.goto(`${api.base}/ui/pipelines/shop?status=late&limit=5`);
    expect(res?.status()).toBe(400);
    expect(await text(page, "#error-message")).toContain("query.status: expected open, final or corrected");
    res = await page.goto(`${api.base}/ui/pipelines/nope`);
    expect(res?.status()).toBe(404);
    expect(await text(page, "#error-message")).toBe('no pipeline named "nope"');
    res = await page.goto(`${api.base}/ui/assets/secret.js`);
    expect(res?.status()).toBe(404);
    await page.close();
  });
});
