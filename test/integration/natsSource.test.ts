/**
 * The NATS JetStream source against a real server (Debian's nats-server, started
 * by the test on a free port): each message lands in bronze once, with its
 * partition's offset recorded in the landing's transaction; a batch landed in
 * part, or landed and never acknowledged (a crash between COMMIT and the
 * acknowledgement), is not landed again.
 */
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { Pool } from "../../src/db/pool.js";
import { createPool } from "../../src/db/pool.js";
import { dropPipeline } from "../../src/lifecycle/drop.js";
import { LogOffsetMovedError, readLogOffsets } from "../../src/db/sql/ingest/logOffsets.js";
import { createLogger } from "../../src/log.js";
import { landLogBatch } from "../../src/sources/landLogBatch.js";
import { LogConsumer } from "../../src/sources/logConsumer.js";
import { NatsSource } from "../../src/sources/nats.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { addStream, natsClient, publishUntilStored, startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { sleep, waitFor } from "../helpers/service.js";
import { runBatch } from "../../src/stream/runBatch.js";

const getDb = useTestDatabase();
const log = createLogger(process.env.NATS_TEST_LOG ?? "silent");
let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await natsClient(server.url);
});
afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

function natsPipeline(name: string, stream: string, extra: Record<string, unknown> = {}): PipelineConfig {
  return pipeline({
    name,
    source: {
      format: "jsonl",
      nats: { servers: server.url, stream, subject: `${stream.toLowerCase()}.*.>`, partitionToken: 2, ...extra },
    },
    fields: { eventTime: "t", groupKey: "k", value: "v" },
    window: { type: "tumbling", size: "1 minute" },
    watermark: { delay: "1 hour" },
    trigger: { interval: "1 second", maxRowsPerBatch: 10 },
  });
}

const PARTS = ["a", "b", "c"];
const T0 = Date.parse("2026-11-30T10:00:00Z");

/** Message i: partition a/b/c in turn, Nats-Msg-Id m-<i> on even i only, payload 7 not JSON. */
async function publish(stream: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const subject = `${stream.toLowerCase()}.${PARTS[i % 3]}.x`;
    const data = i === 7 ? "not json" : { t: new Date(T0 + i * 10_000).toISOString(), k: PARTS[i % 3], v: i };
    await publishUntilStored(nc, subject, data, i % 2 === 0 ? `m-${i}` : undefined);
  }
}

async function consumeAll(
  pool: Pool,
  p: PipelineConfig,
  src: NatsSource,
  expected: number,
): Promise<{ alreadyLanded: number }> {
  let seen = 0,
    alreadyLanded = 0;
  while (seen < expected) {
    const batch = await src.next(p.trigger.maxRowsPerBatch, () => readLogOffsets(pool, p.name, src.log));
    const r = await landLogBatch(pool, p, src.log, batch);
    await src.commit(batch);
    seen += batch.messages.length;
    alreadyLanded += r.alreadyLanded;
  }
  return { alreadyLanded };
}

async function bronze(pool: Pool, name: string) {
  return (
    await pool.query(
      `SELECT event_id, (SELECT name FROM straggler.bronze_sources WHERE id = source_id) AS source, source_line, status, reason FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY event_id`,
      [name],
    )
  ).rows;
}

describe("NATS JetStream source", () => {
  it("lands each message once: a batch landed in part before a crash lands the rest, and nothing twice", async () => {
    const { pool } = await getDb();
    await addStream(nc, "EV", ["ev.>"]);
    await publish("EV", 0, 25);
    const p = natsPipeline("nats-once", "EV");

    // A first consumer pulls 10 messages (sequences 1-10), lands partition a's only, then dies unacknowledged.
    const first = new NatsSource(p.source.nats!, p.name, 1000, log);
    const b1 = await first.next(10, () => readLogOffsets(pool, p.name, first.log));
    expect(b1.messages.map((m) => `${m.partition}${m.offset}`)).toEqual([
      "a1",
      "b2",
      "c3",
      "a4",
      "b5",
      "c6",
      "a7",
      "b8",
      "c9",
      "a10",
    ]);
    await landLogBatch(pool, p, first.log, { messages: b1.messages.filter((m) => m.partition === "a") });
    await first.close();

    // The next consumer resumes from the database: sequences 1-10 come again, partition a's four are left out.
    const second = new NatsSource(p.source.nats!, p.name, 1000, log);
    expect(await consumeAll(pool, p, second, 25)).toEqual({ alreadyLanded: 4 });

    const rows = await bronze(pool, p.name);
    expect(rows).toHaveLength(25);
    const ids = rows.map((r) => r.event_id).sort();
    const expectedIds = Array.from({ length: 25 }, (_, i) => (i % 2 === 0 ? `m-${i}` : `nats:EV:${i + 1}`)).sort();
    expect(ids).toEqual(expectedIds);
    expect(rows.filter((r) => r.status === "quarantined")).toEqual([
      { event_id: "nats:EV:8", source: "nats:EV/b@2", source_line: 3, status: "quarantined", reason: "MALFORMED" },
    ]);
    const sources = (
      await pool.query(`SELECT source, rows FROM straggler.landed_sources WHERE pipeline = $1 ORDER BY first_seq`, [
        p.name,
      ])
    ).rows;
    expect(sources).toEqual([
      { source: "nats:EV/a@1", rows: 4 },
      { source: "nats:EV/b@2", rows: 3 },
      { source: "nats:EV/c@3", rows: 3 },
      { source: "nats:EV/b@11", rows: 4 },
      { source: "nats:EV/c@12", rows: 3 },
      { source: "nats:EV/a@13", rows: 3 },
      { source: "nats:EV/c@21", rows: 2 },
      { source: "nats:EV/a@22", rows: 2 },
      { source: "nats:EV/b@23", rows: 1 },
    ]);
    const offsets = (
      await pool.query(
        `SELECT partition, last_offset::int AS last, messages::int FROM straggler.log_offsets WHERE pipeline = $1 AND partition <> '*' ORDER BY 1`,
        [p.name],
      )
    ).rows;
    expect(offsets).toEqual([
      { partition: "a", last: 25, messages: 9 },
      { partition: "b", last: 23, messages: 8 },
      { partition: "c", last: 24, messages: 8 },
    ]);
    expect(await readLogOffsets(pool, p.name, "nats:EV")).toEqual(
      new Map([
        ["a", 25n],
        ["b", 23n],
        ["c", 24n],
        ["*", 25n],
      ]),
    );
    // The ingestion time is the stream's time of the message (the same at every delivery), not the landing's.
    const jsm = await nc.jetstreamManager();
    const stored = (await jsm.streams.getMessage("EV", { seq: 10 })).time.getTime();
    const ingested = (
      await pool.query(
        `SELECT floor(extract(epoch FROM ingestion_time) * 1000)::bigint AS ms FROM straggler.bronze_events WHERE pipeline = $1 AND event_id = 'nats:EV:10'`,
        [p.name],
      )
    ).rows[0].ms;
    expect(Number(ingested)).toBe(stored);

    // Landed and never acknowledged (a crash between COMMIT and the acknowledgement): nothing lands twice.
    await publish("EV", 25, 30);
    const b3 = await second.next(10, () => readLogOffsets(pool, p.name, second.log));
    expect(b3.messages.map((m) => Number(m.offset))).toEqual([26, 27, 28, 29, 30]);
    expect((await landLogBatch(pool, p, second.log, b3)).landed).toBe(5);
    await second.close();
    const third = new NatsSource(p.source.nats!, p.name, 1000, log);
    const b4 = await third.next(10, () => readLogOffsets(pool, p.name, third.log));
    expect(b4.messages).toEqual([]);
    expect(await bronze(pool, p.name)).toHaveLength(30);
    const info = await jsm.consumers.info("EV", "straggler-nats-once");
    expect([info.num_ack_pending, info.config.opt_start_seq]).toEqual([0, 31]);

    // The pipeline dropped while its consumer runs: the next batch starts the stream again from its start.
    await dropPipeline(pool, p.name);
    const again = await third.next(10, () => readLogOffsets(pool, p.name, third.log));
    expect(again.messages.map((m) => Number(m.offset))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await third.close();
  }, 120_000);

  it("the server stopped and started again while messages are published: every message lands once", async () => {
    const { pool } = await getDb();
    await addStream(nc, "RS", ["rs.>"]);
    const p = natsPipeline("nats-restart", "RS");
    const consumer = new LogConsumer(pool, p, new NatsSource(p.source.nats!, p.name, 1000, log), log);
    consumer.start();
    const N = 300;
    let restart: Promise<void> | undefined;
    for (let i = 0; i < N; i++) {
      // A third of the way, the server stops (SIGTERM) and comes back a second later; publishing goes on, retried until stored.
      if (i === 100)
        restart = server
          .stop()
          .then(() => sleep(1000))
          .then(() => server.start());
      await publishUntilStored(
        nc,
        `rs.${PARTS[i % 3]}.x`,
        { t: new Date(T0 + i * 1000).toISOString(), k: PARTS[i % 3], v: i },
        `r-${i}`,
      );
    }
    await restart;
    const count = async () =>
      (
        await pool.query(
          `SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS ids FROM straggler.bronze_events WHERE pipeline = $1`,
          [p.name],
        )
      ).rows[0];
    await waitFor("every message landed", async () => ((await count()).rows >= N ? true : undefined), 150_000, 100);
    await consumer.stop();
    expect(await count()).toEqual({ rows: N, ids: N });
    const jsm = await nc.jetstreamManager();
    expect((await jsm.streams.info("RS")).state.messages).toBe(N);
    expect(await readLogOffsets(pool, p.name, "nats:RS")).toEqual(
      new Map([
        ["a", 298n],
        ["b", 299n],
        ["c", 300n],
        ["*", 300n],
      ]),
    );
  }, 240_000);

  it("a partition that goes idle: each partition is an input; after idleTimeout it no longer holds the watermark back", async () => {
    const { pool } = await getDb();
    await addStream(nc, "ID", ["id.>"]);
    const at = (hhmm: string) => `2026-11-30T${hhmm}:00.000Z`;
    // a, b and c send 10:00; 2.5 seconds later (the stream's time, the rows' ingestion time) only a and b send 10:30.
    for (const k of PARTS) await publishUntilStored(nc, `id.${k}.x`, { t: at("10:00"), k, v: 1 });
    await sleep(2500);
    for (const k of ["a", "b"]) await publishUntilStored(nc, `id.${k}.x`, { t: at("10:30"), k, v: 1 });
    const watermarks: Record<string, unknown> = {};
    for (const idleTimeout of [undefined, "2 seconds"]) {
      const name = idleTimeout === undefined ? "nats-busy" : "nats-idle";
      const p = pipeline({
        name,
        source: { format: "jsonl", nats: { servers: server.url, stream: "ID", subject: "id.*.>", partitionToken: 2 } },
        fields: { eventTime: "t", groupKey: "k", value: "v" },
        window: { type: "tumbling", size: "10 minutes" },
        watermark: { delay: "1 minute", ...(idleTimeout === undefined ? {} : { idleTimeout }) },
        trigger: { maxRowsPerBatch: 100 },
      });
      const src = new NatsSource(p.source.nats!, p.name, 1000, log);
      const batch = await src.next(100, () => readLogOffsets(pool, p.name, src.log));
      expect((await landLogBatch(pool, p, src.log, batch)).landed).toBe(5);
      await src.commit(batch);
      await src.close();
      await runBatch(pool, p, "once");
      const inputs = (
        await pool.query(
          `SELECT coalesce(input, 'default') AS input, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY 1 ORDER BY 1`,
          [name],
        )
      ).rows;
      expect(inputs).toEqual([
        { input: "a", n: 2 },
        { input: "b", n: 2 },
        { input: "c", n: 1 },
      ]);
      const progress = (
        await pool.query(
          `SELECT to_char(next_watermark AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next_watermark, inputs FROM straggler.batch_progress WHERE pipeline = $1`,
          [name],
        )
      ).rows[0];
      watermarks[name] = {
        watermark: progress.next_watermark,
        inputs: progress.inputs.map((i: { input: string; watermark: string; idle: boolean }) => [
          i.input,
          i.watermark,
          i.idle,
        ]),
      };
    }
    expect(watermarks).toEqual({
      // Without idleTimeout, c (10:00 − 1 minute) holds the pipeline's watermark (min of the inputs').
      "nats-busy": {
        watermark: at("09:59"),
        inputs: [
          ["a", at("10:29"), false],
          ["b", at("10:29"), false],
          ["c", at("09:59"), false],
        ],
      },
      // With it, c has sent nothing for 2.5 s of ingestion time (the stream's time): left out.
      "nats-idle": {
        watermark: at("10:29"),
        inputs: [
          ["a", at("10:29"), false],
          ["b", at("10:29"), false],
          ["c", at("09:59"), true],
        ],
      },
    });
  }, 120_000);

  it("two consumers landing one partition at once (a takeover while the old owner still lands): each message once", async () => {
    const { pool, url } = await getDb();
    const other = createPool(url, 3); // another process: its own append queue, the same append lock
    try {
      const p = natsPipeline("nats-race", "EV");
      const msg = (seq: number) => ({
        partition: "a",
        offset: BigInt(seq),
        data: new TextEncoder().encode(JSON.stringify({ t: new Date(T0 + seq * 1000).toISOString(), k: "a", v: seq })),
        eventId: `nats:EV:${seq}`,
        storedUs: BigInt(T0) * 1000n,
      });
      const old = { messages: [1, 4].map(msg), position: 4n };
      const taker = { messages: [1, 4, 7].map(msg), position: 7n };
      for (let round = 0; round < 5; round++) {
        const settled = await Promise.allSettled([
          landLogBatch(pool, p, "nats:EV", old),
          landLogBatch(other, p, "nats:EV", taker),
        ]);
        for (const r of settled) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(LogOffsetMovedError);
        // A consumer whose landing was refused reads the batch again: what had landed is left out.
        if (settled[0].status === "rejected") await landLogBatch(pool, p, "nats:EV", old);
        if (settled[1].status === "rejected") await landLogBatch(other, p, "nats:EV", taker);
        const rows = (
          await pool.query(
            `SELECT event_id, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY 1 ORDER BY 1`,
            [p.name],
          )
        ).rows;
        expect(rows).toEqual([
          { event_id: "nats:EV:1", n: 1 },
          { event_id: "nats:EV:4", n: 1 },
          { event_id: "nats:EV:7", n: 1 },
        ]);
        expect(await readLogOffsets(pool, p.name, "nats:EV")).toEqual(
          new Map([
            ["a", 7n],
            ["*", 7n],
          ]),
        );
        await pool.query(`DELETE FROM straggler.bronze_events WHERE pipeline = $1`, [p.name]);
        await pool.query(`DELETE FROM straggler.landed_sources WHERE pipeline = $1`, [p.name]);
        // Its sources' records too (the next round lands them anew, at its own ingestion time: drizzle/0053).
        await pool.query(`DELETE FROM straggler.bronze_sources WHERE pipeline = $1`, [p.name]);
        await pool.query(`DELETE FROM straggler.log_offsets WHERE pipeline = $1`, [p.name]);
      }
    } finally {
      await other.end();
    }
  }, 120_000);
});
