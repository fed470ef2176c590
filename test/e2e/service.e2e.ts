/**
 * End to end through containers: PostgreSQL (Testcontainers' PostgreSqlContainer)
 * and the service image (GenericContainer) on one Docker network. The seed
 * late-within-delay is POSTed over HTTP file by file; the stream running in
 * the service container turns it into provisional and final windows (read
 * from PostgreSQL through its mapped port), and `POST /recompute` corrects
 * the window the watermark left wrong.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { PostgreSqlContainer, type StartedPostgreSqlContainer } from "@testcontainers/postgresql";
import pg from "pg";
import { GenericContainer, Network, Wait, type StartedNetwork, type StartedTestContainer } from "testcontainers";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { seedDir } from "../helpers/fixtures.js";
import { PG_IMAGE, since, waitFor } from "./docker.js";

const PIPELINE = "late-within-delay";
const TOKEN = "e2e-token-0123456789abcdef";
const CONFIG_PATH = "/etc/straggler/pipelines.yaml";
// The seed's pipeline (as in pipelines/seed-examples.yaml), fed over HTTP only:
// its landing folder does not exist in the container.
const CONFIG = `pipelines:
  - name: ${PIPELINE}
    source: { landingDir: /data/landing/${PIPELINE}, format: jsonl }
    fields: { eventTime: event_time, value: amount }
    timestamps: { format: iso8601, timeZone: UTC }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 10 minutes }
`;
const seed = (file: string) => readFileSync(path.join(seedDir(PIPELINE), file), "utf8");

let network: StartedNetwork | undefined;
let postgres: StartedPostgreSqlContainer | undefined;
let service: StartedTestContainer | undefined;
let db: pg.Client | undefined;
let api = "";
const serviceLogs: string[] = [];

beforeAll(async () => {
  network = await new Network().start();
  let t0 = Date.now();
  postgres = await new PostgreSqlContainer(PG_IMAGE)
    .withNetwork(network)
    .withNetworkAliases("postgres")
    .withDatabase("straggler")
    .withUsername("straggler")
    .withPassword("straggler")
    .start();
  console.log(`[e2e] PostgreSQL container ${PG_IMAGE} started in ${since(t0)} ms`);

  const image = inject("serviceImage");
  t0 = Date.now();
  service = await new GenericContainer(image)
    .withNetwork(network)
    .withEnvironment({
      DATABASE_URL: "postgres://straggler:straggler@postgres:5432/straggler",
      STRAGGLER_API_TOKEN: TOKEN,
      STRAGGLER_PIPELINES: CONFIG_PATH,
      LOG_LEVEL: "info",
    })
    .withCopyContentToContainer([{ content: CONFIG, target: CONFIG_PATH, mode: 0o644 }])
    .withExposedPorts(8080)
    .withLogConsumer((stream) => stream.on("data", (line) => serviceLogs.push(String(line).trimEnd())))
    .withWaitStrategy(Wait.forHttp("/health", 8080).forStatusCode(200))
    .withStartupTimeout(120_000)
    .start();
  console.log(`[e2e] service container ${image} started (GET /health 200) in ${since(t0)} ms`);
  api = `http://${service.getHost()}:${service.getMappedPort(8080)}`;

  db = new pg.Client({ connectionString: postgres.getConnectionUri() });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await service?.stop();
  await postgres?.stop();
  await network?.stop();
});

const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
  (await db!.query(sql, params)).rows as T[];

/** Windows as `"[12:00,12:10)=19 final r1"`. */
async function windowSummary(): Promise<string[]> {
  const rows = await query<{ w: string }>(
    `SELECT format('[%s,%s)=%s %s r%s', to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI'), to_char(window_end AT TIME ZONE 'UTC', 'HH24:MI'),
                   value_sum, status, revision) AS w
       FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start, group_key`,
    [PIPELINE],
  );
  return rows.map((r) => r.w);
}

/** Micro-batches as `[batch, rows, watermark, next watermark, dropped]`. */
async function batches(): Promise<[number, number, string | null, string | null, number][]> {
  const rows = await query<{
    batch_id: string;
    num_input_rows: number;
    wm: string | null;
    next_wm: string | null;
    dropped: number;
  }>(
    `SELECT batch_id::text, num_input_rows, to_char(watermark AT TIME ZONE 'UTC', 'HH24:MI') AS wm,
            to_char(next_watermark AT TIME ZONE 'UTC', 'HH24:MI') AS next_wm, num_rows_dropped_by_watermark AS dropped
       FROM straggler.stream_progress WHERE pipeline = $1 ORDER BY batch_id`,
    [PIPELINE],
  );
  return rows.map((r) => [Number(r.batch_id), Number(r.num_input_rows), r.wm, r.next_wm, Number(r.dropped)]);
}

/** POSTs one seed file as NDJSON and waits until the stream has applied the landed rows. */
async function postAndStream(file: string): Promise<void> {
  const body = seed(file);
  const lines = body.trim().split("\n").length;
  const source = `http:seed:${file}`;
  const r = await fetch(`${api}/pipelines/${PIPELINE}/events`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/x-ndjson",
      "idempotency-key": `seed:${file}`,
    },
    body,
  });
  const landed = await r.json();
  // The answer's sequence range is exactly the bronze rows of this source.
  const [range] = await query<{ first: number; last: number; n: number }>(
    "SELECT min(seq)::int AS first, max(seq)::int AS last, count(*)::int AS n FROM straggler.bronze WHERE pipeline = $1 AND source = $2",
    [PIPELINE, source],
  );
  expect(range!.n).toBe(lines);
  expect([r.status, landed]).toEqual([
    201,
    {
      pipeline: PIPELINE,
      source,
      alreadyLanded: false,
      landed: lines,
      accepted: lines,
      quarantined: 0,
      byReason: {},
      firstSeq: range!.first,
      lastSeq: range!.last,
    },
  ]);
  // The service's stream (woken by NOTIFY) applies them: its checkpoint offset reaches lastSeq.
  const t0 = Date.now();
  await waitFor(
    `${file} streamed`,
    () =>
      query<{ last_offset: number }>("SELECT last_offset::int FROM straggler.checkpoints WHERE pipeline = $1", [
        PIPELINE,
      ]).then((rows) => rows[0]?.last_offset ?? 0),
    (offset) => offset >= landed.lastSeq,
  );
  console.log(
    `[e2e] ${file}: ${lines} events POSTed (seq ${landed.firstSeq}-${landed.lastSeq}) and streamed in ${since(t0)} ms`,
  );
}

describe("service and PostgreSQL in containers (Testcontainers)", () => {
  it("lands the late-within-delay seed over HTTP, streams it, and corrects the dropped event with POST /recompute", async () => {
    onTestFailed(() => console.error(`[e2e] service container logs:\n${serviceLogs.join("\n")}`));
    const t0 = Date.now();
    expect(await (await fetch(`${api}/health`)).json()).toEqual({ status: "ok", database: "reachable" });

    // 1.json: provisional values, watermark 12:12 - 10 min = 12:02.
    await postAndStream("1.json");
    expect(await batches()).toEqual([[0, 3, null, "12:02", 0]]);
    expect(await windowSummary()).toEqual(["[12:00,12:10)=15 open r1", "[12:10,12:20)=7 open r1"]);

    // 2.json: 12:08 is late but within the delay; the watermark (12:15) closes [12:00,12:10) at 19.
    await postAndStream("2.json");
    expect(await batches()).toEqual([
      [0, 3, null, "12:02", 0],
      [1, 2, "12:02", "12:15", 0],
    ]);
    expect(await windowSummary()).toEqual([
      "[12:00,12:10)=19 final r1",
      "[12:10,12:20)=7 open r1",
      "[12:20,12:30)=3 open r1",
    ]);

    // 3.json: 12:03 (amount 100) is behind the watermark 12:15: dropped, 1 row counted.
    await postAndStream("3.json");
    expect(await batches()).toEqual([
      [0, 3, null, "12:02", 0],
      [1, 2, "12:02", "12:15", 0],
      [2, 2, "12:15", "12:31", 1],
    ]);
    expect(await windowSummary()).toEqual([
      "[12:00,12:10)=19 final r1",
      "[12:10,12:20)=7 final r1",
      "[12:20,12:30)=3 final r1",
      "[12:40,12:50)=1 open r1",
    ]);
    expect(
      await query(
        `SELECT to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS start, dropped_rows::int FROM straggler.windows_awaiting_correction WHERE pipeline = $1`,
        [PIPELINE],
      ),
    ).toEqual([{ start: "12:00", dropped_rows: 1 }]);
    expect(
      await query(`SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1`, [
        PIPELINE,
      ]),
    ).toEqual([{ landed: 7, accepted: 7, quarantined: 0 }]);

    // The correction recomputes [12:00,12:10) from bronze: 19 -> 119, revision 2.
    const r = await fetch(`${api}/pipelines/${PIPELINE}/recompute`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: "{}",
    });
    const summary = await r.json();
    expect([r.status, summary.status, summary.trigger, summary.windowsChanged, summary.eventsRecovered]).toEqual([
      200,
      "succeeded",
      "api",
      1,
      1,
    ]);
    expect(
      summary.changes.map(
        (c: { windowStart: string; before: { sum: string }; after: { sum: string }; revision: number }) => [
          c.windowStart,
          c.before.sum,
          c.after.sum,
          c.revision,
        ],
      ),
    ).toEqual([["2026-10-01T12:00:00.000Z", "19", "119", 2]]);
    expect(
      await query(
        `SELECT to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS start, to_char(window_end AT TIME ZONE 'UTC', 'HH24:MI') AS end,
                event_count::int, value_sum::text, status, revision, awaiting_correction
           FROM straggler.window_results WHERE pipeline = $1 AND window_start = '2026-10-01T12:00:00Z'`,
        [PIPELINE],
      ),
    ).toEqual([
      {
        start: "2026-10-01 12:00",
        end: "12:10",
        event_count: 4,
        value_sum: "119",
        status: "corrected",
        revision: 2,
        awaiting_correction: false,
      },
    ]);
    expect(await windowSummary()).toEqual([
      "[12:00,12:10)=119 corrected r2",
      "[12:10,12:20)=7 final r1",
      "[12:20,12:30)=3 final r1",
      "[12:40,12:50)=1 open r1",
    ]);
    expect(
      await query(`SELECT count(*)::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1`, [
        PIPELINE,
      ]),
    ).toEqual([{ n: 0 }]);
    console.log(`[e2e] seed landed, streamed and corrected through the service container in ${since(t0)} ms`);
  });
});
