/**
 * The taxi pipeline's page in headless Chromium (Debian's `chromium`, driven by playwright-core):
 * after the January 2020 sample of the catalog's taxi trips is landed and streamed with the
 * pipeline as `pipelines/pipelines.yaml` configures it, the page paints its status tiles with the
 * API's figures, then fills its lateness section. The time to the page's first byte and to its
 * tiles is printed; it is asserted only loosely (speed targets are the bench's, BENCHMARKS.md).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPipelines } from "../../src/config/pipelines.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { REPO_ROOT, SHARED_DATA } from "../helpers/fixtures.js";

const CHROMIUM = "/usr/bin/chromium";
const TRIPS = path.join(SHARED_DATA, "nyc-taxi-gx-samples", "yellow_tripdata_sample_2020-01.csv");
const getDb = useTestDatabase();
const taxi = loadPipelines(path.join(REPO_ROOT, "pipelines", "pipelines.yaml")).find((p) => p.name === "nyc-taxi")!;

let api: RunningApi;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: the browser test needs Debian's chromium package (apt-get install -y chromium; .ci/run installs it)`,
    );
  }
  const { pool } = await getDb();
  await landFile(pool, taxi, TRIPS, path.basename(TRIPS));
  while (await runBatch(pool, taxi, "once"));
  api = await startApi({ pool, pipelines: [taxi], log: createLogger("silent"), token: "test-token-0123456789abcdef" });
  browser = await chromium.launch({ executablePath: CHROMIUM });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const num = (s: string | null | undefined) => Number((s ?? "").trim().replace(/,/g, ""));

describe("the taxi pipeline's page in Chromium", () => {
  it("paints its status tiles with the API's figures, then fills the lateness section", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    const started = Date.now();
    const res = await page.goto(`${api.base}/ui/pipelines/nyc-taxi`, { waitUntil: "commit" });
    expect(res?.status()).toBe(200);
    await page.waitForSelector('#overview [data-field="accepted"]', { state: "attached" });
    // The browser's own clock: the page's first byte, and its markup (the tiles) parsed.
    const { firstByteMs, tilesMs } = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      return {
        firstByteMs: Math.round(nav.responseStart - nav.startTime),
        tilesMs: Math.round(nav.domInteractive - nav.startTime),
      };
    });
    await page.waitForSelector('#lateness[data-state="loaded"]', { state: "attached" });
    const completeMs = Date.now() - started;
    console.log(
      `taxi page: first byte ${firstByteMs} ms, tiles parsed ${tilesMs} ms, lateness section filled ${completeMs} ms (wall clock, Playwright included)`,
    );

    const [status] = await (await fetch(`${api.base}/pipelines`)).json();
    const tile = async (field: string) => page.locator(`#overview [data-field="${field}"]`).textContent();
    expect(status.ledger.landed).toBeGreaterThan(5000);
    expect(num(await tile("landed"))).toBe(status.ledger.landed);
    expect(num(await tile("accepted"))).toBe(status.ledger.accepted);
    expect(num(await tile("quarantined"))).toBe(status.ledger.quarantined);
    expect(num(await tile("backlogRows"))).toBe(0);
    expect((await tile("watermark"))?.trim()).toBe(status.watermark);
    expect(await page.locator(`#lateness [data-field="configuredDelay"]`).count()).toBe(1);
    expect(problems).toEqual([]);
    // Loose: a paint within 5 s even on a loaded machine; the targets are the bench's.
    expect(tilesMs).toBeLessThan(5_000);
    await page.close();
  }, 120_000);
});
