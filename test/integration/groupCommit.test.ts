/**
 * Group commit of HTTP landings (src/ingest/groupCommit.ts): requests of one
 * pipeline that wait for its append lock together land in one transaction,
 * each answered with its own counts and sequence range; a bad request never
 * fails its neighbours; Idempotency-Key answers as without groups.
 *
 * A group is formed on purpose: the pipeline's append queue is held by a
 * gate while the requests arrive one by one (each is classified and waits,
 * `waitingInGroup`), then released.
 */
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { inAppendQueue } from "../../src/ingest/appendLock.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { readRecords } from "../../src/ingest/readers.js";
import { waitingInGroup } from "../../src/ingest/groupCommit.js";
import { groupCommitTotals } from "../../src/ingest/groupLanding.js";
import { createLogger } from "../../src/log.js";
import { startApi, type RunningApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { waitFor } from "../helpers/service.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const TOKEN = "group-token-0123456789abcdef";
const orders = (name: string) =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
const pipelines = [
  ...["gc-counts", "gc-bad", "gc-refused", "gc-idem", "gc-probe"].map(orders),
  pipeline({
    name: "gc-latest",
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    admission: { dedupe: "latest" },
  }),
];

let api: RunningApi | undefined;
afterAll(() => api?.close());
async function setup(): Promise<{ pool: Pool; url: string; base: string }> {
  const { pool, url } = await getDb();
  if (!api) api = await startApi({ pool, pipelines, log: createLogger("silent"), token: TOKEN });
  return { pool, url, base: api.base };
}

const ev = (id: string, minute: number, v: number | string) =>
  JSON.stringify({ id, t: `2024-01-15T12:${String(minute).padStart(2, "0")}:00Z`, v });

interface Answer {
  status: number;
  body: Record<string, unknown> & { firstSeq?: number; lastSeq?: number };
}

/** One request of `inOneGroup`: its body, key, and whether it joins the group (false: answered before, e.g. a 400). */
interface Post {
  body: string;
  key?: string;
  joins?: boolean;
  afterJoining?: () => Promise<void>;
}

/**
 * Holds the pipeline's append queue, posts `posts` one after the other (each
 * waits in the group, or is answered, before the next is sent), then releases
 * the queue: every request that joined lands in one group.
 */
async function inOneGroup(pool: Pool, base: string, name: string, posts: Post[]): Promise<Answer[]> {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const held = inAppendQueue(pool, name, () => gate);
  const answers: Promise<Answer>[] = [];
  let joined = 0;
  for (const p of posts) {
    const answer = fetch(`${base}/pipelines/${name}/events`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/x-ndjson",
        ...(p.key ? { "idempotency-key": p.key } : {}),
      },
      body: p.body,
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Answer["body"] }));
    answers.push(answer);
    if (p.joins === false) {
      await answer;
      continue;
    }
    joined++;
    await waitFor(
      `request ${joined} to join the open group`,
      async () => (waitingInGroup(pool, name) >= joined ? true : undefined),
      120_000,
      10,
    );
    await p.afterJoining?.();
  }
  expect(waitingInGroup(pool, name)).toBe(joined);
  open();
  await held;
  return Promise.all(answers);
}

/** Lands `body` under Idempotency-Key `key` as another process would (its own pool: the in-process queue is not in its way). */
async function landElsewhere(url: string, p: PipelineConfig, key: string, body: string): Promise<void> {
  const other = createPool(url, 1);
  try {
    const records = readRecords(Readable.from([Buffer.from(body)]), "jsonl");
    await landRecords(other, p, `http:${key}`, records, {
      landingTimeMs: Date.now(),
      requestSha256: createHash("sha256").update(body).digest("hex"),
    });
  } finally {
    await other.end();
  }
}

/** The distinct transactions (xmin) that wrote the pipeline's bronze rows and landing records. */
async function writers(pool: Pool, name: string): Promise<{ bronze: number; records: number; same: boolean }> {
  const { rows } = await pool.query(
    `SELECT (SELECT count(DISTINCT xmin::text)::int FROM straggler.bronze_events WHERE pipeline = $1) AS bronze,
            (SELECT count(DISTINCT xmin::text)::int FROM straggler.landed_sources WHERE pipeline = $1) AS records,
            (SELECT array_agg(DISTINCT xmin::text) FROM straggler.bronze_events WHERE pipeline = $1) = (SELECT array_agg(DISTINCT xmin::text) FROM straggler.landed_sources WHERE pipeline = $1) AS same`,
    [name],
  );
  return rows[0];
}

describe("group commit", () => {
  it("three requests waiting together land in one transaction, each answered with its own counts and seq range in arrival order", async () => {
    const { pool, base } = await setup();
    const [a, b, c] = await inOneGroup(pool, base, "gc-counts", [
      { key: "a", body: [ev("a1", 1, 10), ev("a2", 2, 20)].join("\n") },
      // b: one event without a time, one with a value that is not a number, one good; and a1 again (a duplicate of a's, in the same group)
      {
        key: "b",
        body: [JSON.stringify({ id: "b1", v: 1 }), ev("b2", 3, "lots"), ev("b3", 4, 30), ev("a1", 1, 10)].join("\n"),
      },
      { body: ev("c1", 5, 40) },
    ]);
    const s = a!.body.firstSeq!;
    expect([a!.status, a!.body]).toEqual([
      201,
      {
        pipeline: "gc-counts",
        source: "http:a",
        alreadyLanded: false,
        landed: 2,
        accepted: 2,
        quarantined: 0,
        byReason: {},
        firstSeq: s,
        lastSeq: s + 1,
      },
    ]);
    expect([b!.status, b!.body]).toEqual([
      201,
      {
        pipeline: "gc-counts",
        source: "http:b",
        alreadyLanded: false,
        landed: 4,
        accepted: 1,
        quarantined: 3,
        byReason: { NULL_TS: 1, INVALID_VALUE: 1, DUPLICATE: 1 },
        firstSeq: s + 2,
        lastSeq: s + 5,
      },
    ]);
    expect([c!.status, { ...c!.body, source: "made up" }]).toEqual([
      201,
      {
        pipeline: "gc-counts",
        source: "made up",
        alreadyLanded: false,
        landed: 1,
        accepted: 1,
        quarantined: 0,
        byReason: {},
        firstSeq: s + 6,
        lastSeq: s + 6,
      },
    ]);
    expect(c!.body.source).toMatch(/^http:[0-9a-f-]{36}$/);
    expect(await writers(pool, "gc-counts")).toEqual({ bronze: 1, records: 1, same: true });
    const recorded = await pool.query(
      "SELECT source, rows, accepted, quarantined, first_seq, last_seq, by_reason FROM straggler.landed_sources WHERE pipeline = 'gc-counts' ORDER BY first_seq",
    );
    expect(recorded.rows).toEqual([
      { source: "http:a", rows: 2, accepted: 2, quarantined: 0, first_seq: s, last_seq: s + 1, by_reason: {} },
      {
        source: "http:b",
        rows: 4,
        accepted: 1,
        quarantined: 3,
        first_seq: s + 2,
        last_seq: s + 5,
        by_reason: { NULL_TS: 1, INVALID_VALUE: 1, DUPLICATE: 1 },
      },
      {
        source: c!.body.source,
        rows: 1,
        accepted: 1,
        quarantined: 0,
        first_seq: s + 6,
        last_seq: s + 6,
        by_reason: {},
      },
    ]);
    const ledger = await pool.query(
      "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = 'gc-counts'",
    );
    expect(ledger.rows).toEqual([{ landed: 7, accepted: 4, quarantined: 3 }]);
  });

  it("a bad request among others: refused before it joins (400), or its key landed meanwhile with another body (422, found under the lock); the others land together", async () => {
    const { pool, url, base } = await setup();
    const [good1, notJson, reused, good2] = await inOneGroup(pool, base, "gc-bad", [
      { body: ev("g1", 2, 2) },
      { body: '[{"id": "n1", "t": ', joins: false }, // an unfinished JSON array: 400, never joins
      // k1 is new when this request arrives; another process lands k1 with another body before the group runs.
      { key: "k1", body: ev("x2", 3, 3), afterJoining: () => landElsewhere(url, pipelines[1]!, "k1", ev("x1", 1, 1)) },
      { body: ev("g2", 4, 4) },
    ]);
    expect([
      good1!.status,
      good1!.body.landed,
      notJson!.status,
      notJson!.body.error,
      reused!.status,
      reused!.body.error,
      good2!.status,
      good2!.body.landed,
    ]).toEqual([201, 1, 400, "invalid_request", 422, "idempotency_key_reused", 201, 1]);
    expect(good2!.body.firstSeq).toBe(good1!.body.lastSeq! + 1);
    const bronze = await pool.query(
      "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, event_id FROM straggler.bronze_events WHERE pipeline = 'gc-bad' ORDER BY seq",
    );
    expect(bronze.rows.map((r) => r.event_id)).toEqual(["x1", "g1", "g2"]);
    expect(bronze.rows[0].source).toBe("http:k1");
  });

  it("a request whose row the database refuses fails alone: the others land again without it, in one transaction", async () => {
    const { pool, base } = await setup();
    // A stand-in for a row PostgreSQL refuses although admission accepted it.
    await pool.query(`CREATE FUNCTION pg_temp_refuse_666() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.pipeline = 'gc-refused' AND NEW.value = 666 THEN RAISE EXCEPTION 'value 666 refused' USING ERRCODE = '22023'; END IF; RETURN NEW; END $$`);
    await pool.query(
      "CREATE TRIGGER refuse_666 BEFORE INSERT ON straggler.bronze_events FOR EACH ROW EXECUTE FUNCTION pg_temp_refuse_666()",
    );
    try {
      const [a, bad, c] = await inOneGroup(pool, base, "gc-refused", [
        { key: "a", body: [ev("a1", 1, 1), ev("a2", 2, 2)].join("\n") },
        { key: "bad", body: [ev("b1", 3, 3), ev("b2", 4, 666), ev("b3", 5, 5)].join("\n") },
        { key: "c", body: ev("c1", 6, 6) },
      ]);
      expect([a!.status, a!.body.landed, bad!.status, bad!.body.error, c!.status, c!.body.landed]).toEqual([
        201,
        2,
        500,
        "internal",
        201,
        1,
      ]);
      expect([a!.body.lastSeq! - a!.body.firstSeq!, c!.body.firstSeq! > a!.body.lastSeq!]).toEqual([1, true]);
      const bronze = await pool.query(
        "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, event_id FROM straggler.bronze_events WHERE pipeline = 'gc-refused' ORDER BY seq",
      );
      expect(bronze.rows).toEqual([
        { source: "http:a", event_id: "a1" },
        { source: "http:a", event_id: "a2" },
        { source: "http:c", event_id: "c1" },
      ]);
      expect(await writers(pool, "gc-refused")).toEqual({ bronze: 1, records: 1, same: true });
    } finally {
      await pool.query("DROP TRIGGER refuse_666 ON straggler.bronze_events");
      await pool.query("DROP FUNCTION pg_temp_refuse_666()");
    }
    // Without the refusal, the same request lands.
    const retry = await fetch(`${base}/pipelines/gc-refused/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "bad" },
      body: [ev("b1", 3, 3), ev("b2", 4, 666), ev("b3", 5, 5)].join("\n"),
    });
    expect([retry.status, ((await retry.json()) as { landed: number }).landed]).toEqual([201, 3]);
  });

  it("idempotent replays in a group: a retry is the first answer (200), also when the first landed meanwhile; a second request with the same key waits for the next group", async () => {
    const { pool, url, base } = await setup();
    const k1 = [ev("i1", 1, 1), ev("i2", 2, 2)].join("\n");
    const firstPost = await fetch(`${base}/pipelines/gc-idem/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "k1" },
      body: k1,
    });
    const first = (await firstPost.json()) as Answer["body"];
    expect([firstPost.status, first.landed]).toEqual([201, 2]);
    const [retry, k2a, k2b, k3, k4] = await inOneGroup(pool, base, "gc-idem", [
      { key: "k1", body: k1, joins: false }, // landed before: answered at once
      { key: "k2", body: ev("j1", 3, 3) },
      { key: "k2", body: ev("j1", 3, 3) },
      { key: "k3", body: ev("l1", 4, 4) },
      // k4 is new when this request arrives; the same body lands under k4 from another process before the group runs.
      { key: "k4", body: ev("m1", 5, 5), afterJoining: () => landElsewhere(url, pipelines[3]!, "k4", ev("m1", 5, 5)) },
    ]);
    expect([retry!.status, retry!.body]).toEqual([200, { ...first, alreadyLanded: true }]);
    expect([k2a!.status, k2b!.status, k3!.status, k4!.status]).toEqual([201, 200, 201, 200]);
    expect(k2b!.body).toEqual({ ...k2a!.body, alreadyLanded: true });
    const s = first.lastSeq!;
    expect([k4!.body.firstSeq, k2a!.body.firstSeq, k3!.body.firstSeq, k4!.body.landed]).toEqual([
      s + 1,
      s + 2,
      s + 3,
      1,
    ]);
    const bronze = await pool.query(
      "SELECT (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, event_id, status FROM straggler.bronze_events WHERE pipeline = 'gc-idem' ORDER BY seq",
    );
    expect(bronze.rows).toEqual([
      { source: "http:k1", event_id: "i1", status: "accepted" },
      { source: "http:k1", event_id: "i2", status: "accepted" },
      { source: "http:k4", event_id: "m1", status: "accepted" },
      { source: "http:k2", event_id: "j1", status: "accepted" },
      { source: "http:k3", event_id: "l1", status: "accepted" },
    ]);
  });

  it("the dedupe runs in the group's transaction: under first a re-send with other content is AMENDED_DUPLICATE, an identical one DUPLICATE; under latest the last version supersedes", async () => {
    const { pool, base } = await setup();
    await fetch(`${base}/pipelines/gc-counts/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "d0" },
      body: ev("d1", 1, 1),
    });
    const [x, y] = await inOneGroup(pool, base, "gc-counts", [
      { key: "d-x", body: [ev("d1", 1, 1), ev("d2", 2, 2)].join("\n") },
      { key: "d-y", body: [ev("d1", 1, 5), ev("d2", 2, 2), ev("d3", 3, 3)].join("\n") },
    ]);
    expect([x!.status, x!.body.accepted, x!.body.byReason, y!.status, y!.body.accepted, y!.body.byReason]).toEqual([
      201,
      1,
      { DUPLICATE: 1 },
      201,
      1,
      { AMENDED_DUPLICATE: 1, DUPLICATE: 1 },
    ]);
    const d = await pool.query(
      "SELECT event_id, status, reason FROM straggler.bronze_events WHERE pipeline = 'gc-counts' AND event_id LIKE 'd_' ORDER BY seq",
    );
    expect(d.rows.map((r) => `${r.event_id} ${r.status} ${r.reason ?? ""}`.trim())).toEqual([
      "d1 accepted",
      "d1 quarantined DUPLICATE",
      "d2 accepted",
      "d1 quarantined AMENDED_DUPLICATE",
      "d2 quarantined DUPLICATE",
      "d3 accepted",
    ]);

    const [l0] = await inOneGroup(pool, base, "gc-latest", [{ key: "l0", body: ev("e1", 1, 1) }]);
    const [l1, l2] = await inOneGroup(pool, base, "gc-latest", [
      { key: "l1", body: [ev("e1", 1, 2), ev("e2", 2, 2)].join("\n") },
      { key: "l2", body: [ev("e1", 1, 3), ev("e2", 2, 2)].join("\n") },
    ]);
    expect([l1!.body.accepted, l1!.body.byReason, l2!.body.accepted, l2!.body.byReason]).toEqual([
      2,
      {},
      1,
      { DUPLICATE: 1 },
    ]);
    const s = l0!.body.firstSeq!;
    const superseded = await pool.query(
      "SELECT seq::int, superseded_by::int FROM straggler.superseded_events WHERE pipeline = 'gc-latest' ORDER BY seq",
    );
    // e1 = 1 (landed before) is superseded by e1 = 2, which is superseded by e1 = 3 in the same group.
    expect(superseded.rows).toEqual([
      { seq: s, superseded_by: s + 1 },
      { seq: s + 1, superseded_by: s + 3 },
    ]);
    expect(await writers(pool, "gc-latest")).toEqual({ bronze: 2, records: 2, same: true });
  });

  it("a group probes its accepted ids before its COPY: the dedupe runs only where an id may repeat (in bronze before, twice in one request, in two requests of the group)", async () => {
    const { pool, base } = await setup();
    await fetch(`${base}/pipelines/gc-probe/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "p0" },
      body: ev("p1", 1, 1),
    });
    /** The group's answers (status, accepted, reasons) and whether its dedupe ran. */
    const group = async (posts: Post[]) => {
      const before = groupCommitTotals();
      const answers = await inOneGroup(pool, base, "gc-probe", posts);
      const after = groupCommitTotals();
      expect(after.groups - before.groups).toBe(1);
      return {
        answers: answers.map((a) => [a.status, a.body.accepted, a.body.byReason]),
        deduped: after.deduped - before.deduped,
      };
    };
    // Every id new: the probe finds none, no dedupe.
    expect(
      await group([
        { key: "pa1", body: [ev("p2", 2, 2), ev("p3", 3, 3)].join("\n") },
        { key: "pa2", body: ev("p4", 4, 4) },
      ]),
    ).toEqual({
      answers: [
        [201, 2, {}],
        [201, 1, {}],
      ],
      deduped: 0,
    });
    // One id in two requests of the group, in bronze before neither.
    expect(
      await group([
        { key: "pb1", body: ev("p5", 5, 5) },
        { key: "pb2", body: [ev("p5", 5, 5), ev("p6", 6, 6)].join("\n") },
      ]),
    ).toEqual({
      answers: [
        [201, 1, {}],
        [201, 1, { DUPLICATE: 1 }],
      ],
      deduped: 1,
    });
    // One id twice in one request.
    expect(await group([{ key: "pc1", body: [ev("p7", 7, 7), ev("p7", 7, 8)].join("\n") }])).toEqual({
      answers: [[201, 1, { AMENDED_DUPLICATE: 1 }]],
      deduped: 1,
    });
    // An id accepted in bronze before (p1), each id once in the group: found by the probe.
    expect(
      await group([
        { key: "pd1", body: [ev("p8", 8, 8), ev("p1", 1, 1)].join("\n") },
        { key: "pd2", body: ev("p9", 9, 9) },
      ]),
    ).toEqual({
      answers: [
        [201, 1, { DUPLICATE: 1 }],
        [201, 1, {}],
      ],
      deduped: 1,
    });
    // Under `latest` too: new ids supersede nothing, and no dedupe runs.
    const beforeLatest = groupCommitTotals();
    const [n1] = await inOneGroup(pool, base, "gc-latest", [
      { key: "pl1", body: [ev("n1", 1, 1), ev("n2", 2, 2)].join("\n") },
    ]);
    const superseded = await pool.query(
      "SELECT count(*)::int AS n FROM straggler.superseded_events WHERE pipeline = 'gc-latest' AND event_id IN ('n1', 'n2')",
    );
    expect([
      n1!.status,
      n1!.body.accepted,
      superseded.rows[0].n,
      groupCommitTotals().deduped - beforeLatest.deduped,
    ]).toEqual([201, 2, 0, 0]);
    const rows = await pool.query(
      "SELECT event_id, status, reason FROM straggler.bronze_events WHERE pipeline = 'gc-probe' ORDER BY seq",
    );
    expect(rows.rows.map((r) => `${r.event_id} ${r.status} ${r.reason ?? ""}`.trim())).toEqual([
      "p1 accepted",
      "p2 accepted",
      "p3 accepted",
      "p4 accepted",
      "p5 accepted",
      "p5 quarantined DUPLICATE",
      "p6 accepted",
      "p7 accepted",
      "p7 quarantined AMENDED_DUPLICATE",
      "p8 accepted",
      "p1 quarantined DUPLICATE",
      "p9 accepted",
    ]);
  });
});
