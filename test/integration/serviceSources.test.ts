/**
 * Tried as a new user would: the real service (`straggler serve`), a
 * spreadsheet export, a good feed, a file whose header is wrong and a file
 * still being written dropped into its landing folder while events are
 * POSTed over HTTP (one with a line over the record limit). Nothing stalls,
 * nothing is lost, and each problem is named with its file — in the sources
 * API, in `GET /pipelines`, and once in the log.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../helpers/db.js";
import { freePort, startServe, waitFor, type ServeProcess } from "../helpers/service.js";

const getDb = useTestDatabase();
const TOKEN = "sources-token-0123456789";
const DIR = mkdtempSync(path.join(os.tmpdir(), "straggler-service-sources-"));
let service: ServeProcess | undefined;
afterAll(async () => {
  service?.child.kill("SIGTERM");
  await service?.exited;
  rmSync(DIR, { recursive: true, force: true });
});

/** Files written an hour ago: quiet for longer than the settle period. */
function drop(dir: string, name: string, text: string, quiet = true): void {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  if (quiet) {
    const past = (Date.now() - 3_600_000) / 1000;
    utimesSync(file, past, past);
  }
}

describe("the service with bad, half-written and good files while events are POSTed", () => {
  it("lands every good source, refuses the bad file by name once, waits for the half-written one, and the window is exact", async () => {
    const { url, pool } = await getDb();
    const landing = path.join(DIR, "landing");
    mkdirSync(landing);
    const config = path.join(DIR, "pipelines.yaml");
    writeFileSync(
      config,
      `pipelines:
  - name: orders
    source: { landingDir: ${JSON.stringify(landing)}, format: csv, settle: 10 minutes }
    fields: { eventTime: event_time, value: amount }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    trigger: { interval: 200 milliseconds }
  - name: no-folder
    source: { landingDir: ${JSON.stringify(path.join(DIR, "no-such-folder"))}, format: csv }
    fields: { eventTime: event_time }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
    trigger: { interval: 200 milliseconds }
`,
    );
    service = startServe(await freePort(), {
      DATABASE_URL: url,
      STRAGGLER_PIPELINES: config,
      STRAGGLER_API_TOKEN: TOKEN,
      LOG_LEVEL: "info",
    });
    await service.waitHealthy();
    const post = (body: string) =>
      service!.request("POST", "/pipelines/orders/events", {
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" },
        body,
      });

    drop(landing, "a-export.csv", "event_time,amount,,\r\n2024-01-15T12:01:00Z,10,,\r\n");
    drop(landing, "b-feed.csv", "event_time,amount\n2024-01-15T12:02:00Z,20\n");
    drop(landing, "c-bad.csv", "Event_Time,Amount\n2024-01-15T12:05:00Z,1000\n");
    const half = "event_time,amount\n2024-01-15T12:01:00Z,10.00\n2024-01-15T12:02:00Z,20.00\n2024-01-15T12:03:00Z,12";
    drop(landing, "d-half.csv", half, false); // being written right now
    expect((await post('{"event_time":"2024-01-15T12:03:00Z","amount":30}')).status).toBe(201);
    const big = await post(
      `{"event_time":"2024-01-15T12:06:00Z","amount":1,"pad":"${"x".repeat(2 * 1024 * 1024)}"}\n{"event_time":"2024-01-15T12:06:00Z","amount":1}`,
    );
    expect([
      big.status,
      (big.json as { landed: number; byReason: object }).landed,
      (big.json as { byReason: object }).byReason,
    ]).toEqual([201, 2, { MALFORMED: 1 }]);

    type Row = { source: string; kind: string; state: string; reason: string | null; rows: number };
    const sources = async () =>
      (await service!.request("GET", "/pipelines/orders/sources?kind=file")).json as {
        byState: Record<string, number>;
        rows: Row[];
      };
    const fileStates = async () => Object.fromEntries((await sources()).rows.map((r) => [r.source, r.state]));
    await waitFor("the files seen", async () => {
      const s = await fileStates();
      return Object.keys(s).length === 4 ? s : undefined;
    });
    // Several landing passes later, the refused file is still logged once only.
    await waitFor("the posted events streamed", async () => {
      const w = await pool.query("SELECT value_sum FROM straggler.window_results WHERE pipeline = 'orders'");
      return w.rows[0]?.value_sum === "61" ? true : undefined;
    });
    expect(await fileStates()).toEqual({
      "a-export.csv": "landed",
      "b-feed.csv": "landed",
      "c-bad.csv": "refused",
      "d-half.csv": "waiting_to_settle",
    });
    const bad = (await sources()).rows.find((r) => r.source === "c-bad.csv")!;
    expect(bad.reason).toBe(
      'CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive',
    );
    const pipelines = (await service.request("GET", "/pipelines")).json as {
      pipeline: string;
      sources: Record<string, number>;
    }[];
    // Sources: two files and two requests landed; one refused; one waiting.
    expect(pipelines.find((p) => p.pipeline === "orders")!.sources).toEqual({
      landed: 4,
      refused: 1,
      changed_after_landing: 0,
      waiting_to_settle: 1,
    });

    // The writer finishes; quiet for the settle period, the file lands whole.
    drop(landing, "d-half.csv", half + "5.50\n2024-01-15T12:04:00Z,7.00\n");
    await waitFor("the completed file landed and streamed", async () => {
      const w = await pool.query("SELECT value_sum FROM straggler.window_results WHERE pipeline = 'orders'");
      return w.rows[0]?.value_sum === "223.50" ? true : undefined;
    });
    const ledger = await pool.query(
      "SELECT landed, accepted, quarantined FROM straggler.ledger WHERE pipeline = 'orders'",
    );
    expect(ledger.rows[0]).toEqual({ landed: 9, accepted: 8, quarantined: 1 });
    const warned = service
      .output()
      .split("\n")
      .filter((l) => l.includes('"level":40') && l.includes("c-bad.csv"));
    expect(warned).toHaveLength(1);
    // A landing folder that does not exist is warned about once, not every pass.
    const missing = service
      .output()
      .split("\n")
      .filter((l) => l.includes('"level":40') && l.includes("no-such-folder"));
    expect(missing.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual([
      `pipeline no-folder: landing folder ${path.join(DIR, "no-such-folder")} does not exist; no files land until it exists`,
    ]);
    expect(service.errorLines()).toEqual([]);
  });
});
