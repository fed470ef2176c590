/**
 * The change feed (docs/change-feed.md): every change of a published window
 * in `straggler.window_changes`, written beside the statements that make it;
 * a consumer that stores the last id it applied gets every change once across
 * its restarts, and its copy equals `straggler.window_results`.
 */
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { readChanges, type FeedChange } from "../../src/db/sql/feed/readChanges.js";
import { CHANGES_CHANNEL, listenForChanges } from "../../src/db/sql/feed/notifyChanges.js";
import { pruneChanges } from "../../src/db/sql/feed/pruneChanges.js";
import { pruneFeeds } from "../../src/retention/feedPrune.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { cutover } from "../../src/lifecycle/cutover.js";
import { holdPipeline, releasePipeline } from "../../src/lifecycle/hold.js";
import { rebuild } from "../../src/lifecycle/rebuild.js";
import { endChangeStreams } from "../../src/http/feedRoutes.js";
import { createLogger } from "../../src/log.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi } from "../helpers/api.js";
import { useTestDatabase } from "../helpers/db.js";
import { lateWithinDelay, pipeline, seedDir } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

/** A consumer's own copy: one entry per published window, as the feed says. */
type Copy = Map<string, string>;
const windowOf = (key: string | null, start: string, end: string) => `${key ?? "∅"} [${start},${end})`;
const valueOf = (a: { count: number; sum: string | null; min: string | null; max: string | null }, revision: number) =>
  `n=${a.count} sum=${a.sum} min=${a.min} max=${a.max} rev=${revision}`;

/** Applies one change to `copy` (markers change no window). */
function apply(copy: Copy, c: FeedChange): void {
  if (c.windowStart === null) return;
  const w = windowOf(c.key, c.windowStart, c.windowEnd!);
  if (c.after === null) copy.delete(w);
  else copy.set(w, valueOf(c.after, c.revision!));
}

/** What `straggler.window_results` publishes, in the copy's shape. */
async function published(pool: Pool, name: string): Promise<Copy> {
  const { rows } = await pool.query(
    "SELECT group_key, window_start, window_end, event_count, value_sum::text, value_min::text, value_max::text, revision FROM straggler.window_results WHERE pipeline = $1",
    [name],
  );
  return new Map(
    rows.map((r) => [
      windowOf(r.group_key, r.window_start, r.window_end),
      valueOf({ count: Number(r.event_count), sum: r.value_sum, min: r.value_min, max: r.value_max }, r.revision),
    ]),
  );
}

const sorted = (copy: Copy) => [...copy].map(([w, v]) => `${w} ${v}`).sort();

/** A consumer that keeps its copy and the last id it applied (as it would in its own database), reading `pageSize` at a time. */
class Consumer {
  readonly applied: number[] = [];
  constructor(
    readonly stored: { lastId: number; copy: Copy },
    private readonly pageSize: number,
  ) {}
  /** Reads pages until the feed has no more (or `maxPages`, then "stops"). */
  async run(pool: Pool, name: string, maxPages = Infinity): Promise<void> {
    for (let i = 0; i < maxPages; i++) {
      const page = await readChanges(pool, name, this.stored.lastId, this.pageSize);
      if (page.changes.length === 0) return;
      for (const c of page.changes) {
        apply(this.stored.copy, c);
        this.stored.lastId = c.id; // in the consumer's transaction with the copy
        this.applied.push(c.id);
      }
    }
  }
}

const lines = (rows: { id: string; t: string; k: string; v: number }[]) =>
  Readable.from([rows.map((r) => JSON.stringify(r)).join("\n") + "\n"]);

const keyedRaw = (name: string) => ({
  name,
  source: { format: "jsonl" },
  fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
  timestamps: { format: "iso8601" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
  feed: { enabled: true },
});
const keyed = (name: string): PipelineConfig => pipeline(keyedRaw(name));

describe("change feed", () => {
  it("the late-within-delay seed: micro-batch 1 → new, 2 → updated, the dropped 12:03 event recovered by correction run 1 (19 → 119, revision 2)", async () => {
    const { pool } = await getDb();
    const p = { ...lateWithinDelay("feed-seed"), feed: { enabled: true } };
    for (const f of ["1.json", "2.json", "3.json"]) {
      await landFile(pool, p, path.join(seedDir("late-within-delay"), f), f);
      await runBatch(pool, p, "once");
    }
    const run = await runCorrection(pool, p, { trigger: "cli" });
    const { changes } = await readChanges(pool, p.name, 0, 100);
    const shown = changes.map(
      (c) =>
        `${c.change} [${c.windowStart!.slice(11, 16)},${c.windowEnd!.slice(11, 16)}) ${c.before?.sum ?? "-"} -> ${c.after?.sum ?? "-"} rev ${c.revision} ${JSON.stringify(c.cause)}`,
    );
    // In id order: commit order, and key and window order inside a statement.
    expect(shown).toEqual([
      'new [12:00,12:10) - -> 15 rev 1 {"batchId":0}',
      'new [12:10,12:20) - -> 7 rev 1 {"batchId":0}',
      'updated [12:00,12:10) 15 -> 19 rev 1 {"batchId":1}',
      'new [12:20,12:30) - -> 3 rev 1 {"batchId":1}',
      'new [12:40,12:50) - -> 1 rev 1 {"batchId":2}',
      `corrected [12:00,12:10) 19 -> 119 rev 2 {"correctionRunId":${run.runId}}`,
    ]);
    expect(changes.map((c) => c.id)).toEqual([...changes.map((c) => c.id)].sort((a, b) => a - b));
    const copy: Copy = new Map();
    for (const c of changes) apply(copy, c);
    expect(sorted(copy)).toEqual(sorted(await published(pool, p.name)));
  });

  it("a consumer stopped mid-way resumes from its stored id: it gets exactly the rest, each change once, through more batches, a correction, a hold and its release; its copy equals window_results", async () => {
    const { pool } = await getDb();
    const p = keyed("feed-consumer");
    const at = (m: number) => `2026-10-01T12:${String(m).padStart(2, "0")}:00Z`;
    await landStream(
      pool,
      p,
      lines([
        { id: "a1", t: at(1), k: "a", v: 1 },
        { id: "b1", t: at(2), k: "b", v: 2 },
        { id: "a2", t: at(12), k: "a", v: 3 },
        { id: "b2", t: at(14), k: "b", v: 4 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    await landStream(
      pool,
      p,
      lines([
        { id: "a3", t: at(5), k: "a", v: 5 },
        { id: "c1", t: at(31), k: "c", v: 6 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once"); // watermark 12:21 after it

    const stored = { lastId: 0, copy: new Map() as Copy };
    const first = new Consumer(stored, 2);
    await first.run(pool, p.name, 2); // 4 of the 6 changes so far, then it stops
    expect(first.applied).toHaveLength(4);

    // More lands while it is stopped: a late event (dropped, then corrected), a hold with a batch underneath, the release.
    await landStream(
      pool,
      p,
      lines([
        { id: "a4", t: at(3), k: "a", v: 100 },
        { id: "c2", t: at(33), k: "c", v: 7 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect(run.windowsChanged).toBe(1);
    const { hold } = await holdPipeline(pool, p.name, "checking a feed");
    await landStream(
      pool,
      p,
      lines([
        { id: "c3", t: at(35), k: "c", v: 8 },
        { id: "d1", t: at(52), k: "d", v: 9 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");

    // Restarted while held: the feed stops at the hold's marker, and the copy is what is published (the held copy).
    const second = new Consumer(stored, 3);
    await second.run(pool, p.name);
    const held = await readChanges(pool, p.name, stored.lastId, 100);
    expect([held.changes.length, held.heldBy]).toEqual([0, hold.holdId]);
    expect(sorted(stored.copy)).toEqual(sorted(await published(pool, p.name)));

    await releasePipeline(pool, p.name);
    await second.run(pool, p.name);
    const all = (await readChanges(pool, p.name, 0, 1000)).changes;
    // Every change once, in id order, across the restart.
    expect([...first.applied, ...second.applied]).toEqual(all.map((c) => c.id));
    expect(
      all.map(
        (c) =>
          `${c.change} ${c.key ?? ""} ${c.windowStart?.slice(11, 16) ?? ""} ${c.before?.count ?? "-"}->${c.after?.count ?? "-"}`,
      ),
    ).toEqual([
      "new a 12:00 -->1",
      "new a 12:10 -->1",
      "new b 12:00 -->1",
      "new b 12:10 -->1",
      "updated a 12:00 1->2",
      "new c 12:30 -->1",
      "updated c 12:30 1->2",
      "corrected a 12:00 2->3",
      "held   -->-",
      "updated c 12:30 2->3",
      "new d 12:50 -->1",
      "released   -->-",
    ]);
    expect(sorted(stored.copy)).toEqual(sorted(await published(pool, p.name)));
    expect(stored.copy.get(windowOf("a", at(0).replace(":00Z", ":00.000Z"), at(10).replace(":00Z", ":00.000Z")))).toBe(
      "n=3 sum=106 min=1 max=100 rev=2",
    );
  });

  it("session windows: the stream's merge retracts the sessions it joins, the correction's replacement the one it extends; the copy equals window_results", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      name: "feed-sessions",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
      timestamps: { format: "iso8601" },
      window: { type: "session", gap: "5 minutes" },
      watermark: { delay: "10 minutes" },
      feed: { enabled: true },
    });
    await landStream(
      pool,
      p,
      lines([
        { id: "1", t: "2026-10-01T12:00:00Z", k: "a", v: 1 },
        { id: "2", t: "2026-10-01T12:08:00Z", k: "a", v: 2 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    await landStream(
      pool,
      p,
      lines([
        { id: "3", t: "2026-10-01T12:04:00Z", k: "a", v: 3 },
        { id: "4", t: "2026-10-01T12:40:00Z", k: "a", v: 4 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    await landStream(
      pool,
      p,
      lines([
        { id: "5", t: "2026-10-01T12:12:00Z", k: "a", v: 5 },
        { id: "6", t: "2026-10-01T13:30:00Z", k: "a", v: 6 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    await landStream(pool, p, lines([{ id: "7", t: "2026-10-01T12:16:00Z", k: "a", v: 7 }]), "stream");
    await runBatch(pool, p, "once");
    await runCorrection(pool, p, { trigger: "cli" });
    const { changes } = await readChanges(pool, p.name, 0, 100);
    expect(
      changes.map(
        (c) =>
          `${c.change} ${c.windowStart!.slice(11, 16)}-${c.windowEnd!.slice(11, 16)} ${c.before?.count ?? "-"}->${c.after?.count ?? "-"}`,
      ),
    ).toEqual([
      "new 12:00-12:05 -->1",
      "new 12:08-12:13 -->1",
      "retracted 12:00-12:05 1->-",
      "retracted 12:08-12:13 1->-",
      "new 12:00-12:13 -->3",
      "new 12:40-12:45 -->1",
      "new 13:30-13:35 -->1",
      // 12:12 and 12:16 were late (their windows end before the watermark 12:30): the correction
      // merges them with the final session 12:00-12:13, which it retracts.
      "retracted 12:00-12:13 3->-",
      "corrected 12:00-12:21 -->5",
    ]);
    const copy: Copy = new Map();
    for (const c of changes) apply(copy, c);
    expect(sorted(copy)).toEqual(sorted(await published(pool, p.name)));
  });

  it("an amended event, a rebuild cut over and rolled back: each change once; the copy equals window_results after each", async () => {
    const { pool } = await getDb();
    const raw = {
      name: "feed-versions",
      source: { format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: ["k"], value: "v" },
      timestamps: { format: "iso8601" },
      window: { type: "tumbling", size: "10 minutes" },
      watermark: { delay: "10 minutes" },
      admission: { dedupe: "latest", maxFutureSkew: null },
      feed: { enabled: true },
    };
    const live = pipeline(raw);
    const copy: Copy = new Map();
    let lastId = 0;
    const catchUp = async () => {
      const page = await readChanges(pool, live.name, lastId, 1000);
      for (const c of page.changes) apply(copy, c);
      lastId = page.next;
      return page.changes.map(
        (c) =>
          `${c.change} ${c.key} ${c.windowStart!.slice(11, 16)} ${c.before?.sum ?? "-"}->${c.after?.sum ?? "-"} ${JSON.stringify(c.cause)}`,
      );
    };
    await landStream(
      pool,
      live,
      lines([
        { id: "1", t: "2026-10-01T12:01:00Z", k: "a", v: 10 },
        { id: "2", t: "2026-10-01T12:11:00Z", k: "a", v: 20 },
      ]),
      "stream",
    );
    await runBatch(pool, live, "once");
    // Event 1 amended (dedupe latest) while its window is open: the batch recomputes the window without the old version.
    await landStream(pool, live, lines([{ id: "1", t: "2026-10-01T12:02:00Z", k: "a", v: 15 }]), "stream");
    await runBatch(pool, live, "once");
    expect(await catchUp()).toEqual([
      'new a 12:00 -->10 {"batchId":0}',
      'new a 12:10 -->20 {"batchId":0}',
      'updated a 12:00 10->25 {"batchId":1}',
      'updated a 12:00 25->15 {"batchId":1}',
    ]);
    expect(sorted(copy)).toEqual(sorted(await published(pool, live.name)));

    // A policy that refuses events before 12:10: rebuilt beside the live version, cut over, rolled back.
    const strict = pipeline({ ...raw, admission: { ...raw.admission, minEventTime: "2026-10-01T12:10:00Z" } });
    const built = await rebuild(pool, strict);
    expect(await catchUp()).toEqual([]); // a candidate changes nothing published
    await cutover(pool, strict, built.version);
    expect(await catchUp()).toEqual([`cutover a 12:00 15->- {"version":${built.version}}`]);
    expect(sorted(copy)).toEqual(sorted(await published(pool, live.name)));
    await cutover(pool, live, 1);
    expect(await catchUp()).toEqual(['cutover a 12:00 -->15 {"version":1}']);
    expect(sorted(copy)).toEqual(sorted(await published(pool, live.name)));
  });

  it("retention: the changes of windows past the correction horizon go as a prefix of the feed; a read after an id below it is refused", async () => {
    const { pool } = await getDb();
    const p = pipeline({
      ...keyedRaw("feed-retention"),
      retention: { correctionHorizon: "10 minutes", archive: "archive" },
    });
    const without = keyed("feed-no-retention");
    const events = [1, 11, 21, 31, 51].map((m) => ({
      id: String(m),
      t: `2026-10-01T12:${String(m).padStart(2, "0")}:00Z`,
      k: "a",
      v: m,
    }));
    for (const q of [p, without]) {
      await landStream(pool, q, lines(events), "stream");
      await runBatch(pool, q, "once");
    }
    const before = (await readChanges(pool, p.name, 0, 100)).changes;
    // Watermark 12:41, horizon 10 minutes: [12:00,12:10), [12:10,12:20), [12:20,12:30) end at or before 12:31.
    expect(await pruneFeeds(pool, [p, without])).toEqual({ [p.name]: 3 });
    expect(
      (await readChanges(pool, p.name, before[2]!.id, 100)).changes.map((c) => c.windowStart!.slice(11, 16)),
    ).toEqual(["12:30", "12:50"]);
    await expect(readChanges(pool, p.name, before[1]!.id, 100)).rejects.toThrow(
      `the change feed of ${p.name} was pruned through id ${before[2]!.id}`,
    );
    expect((await readChanges(pool, without.name, 0, 100)).changes).toHaveLength(5);
  });

  it("REST: a page after an id, the Server-Sent Events stream resuming after Last-Event-ID, 409 without feed.enabled, 410 once pruned; NOTIFY on the channel", async () => {
    const { pool } = await getDb();
    const p = keyed("feed-rest");
    const off = { ...keyed("feed-off"), feed: { enabled: false } };
    const listener = await pool.connect();
    const heard: string[] = [];
    listener.on("notification", (n) => n.channel === CHANGES_CHANNEL && heard.push(n.payload ?? ""));
    await listenForChanges(listener);
    await landStream(
      pool,
      p,
      lines([
        { id: "1", t: "2026-10-01T12:01:00Z", k: "a", v: 1 },
        { id: "2", t: "2026-10-01T12:11:00Z", k: "b", v: 2 },
      ]),
      "stream",
    );
    await runBatch(pool, p, "once");
    const api = await startApi({ pool, pipelines: [p, off], log: createLogger("silent"), token: undefined });
    try {
      const all = (await readChanges(pool, p.name, 0, 10)).changes;
      expect(all).toHaveLength(2);
      const page = await fetch(`${api.base}/pipelines/${p.name}/changes?after=${all[0]!.id}&limit=5`);
      expect(page.status).toBe(200);
      expect(await page.json()).toEqual({
        pipeline: p.name,
        after: all[0]!.id,
        next: all[1]!.id,
        heldBy: null,
        changes: [all[1]],
      });

      const ctl = new AbortController();
      const sse = await fetch(`${api.base}/pipelines/${p.name}/changes/stream`, {
        headers: { "Last-Event-ID": String(all[0]!.id) },
        signal: ctl.signal,
      });
      expect([sse.status, sse.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
      const reader = sse.body!.getReader();
      let text = "";
      const events = () => text.split("\n\n").filter((e) => e.startsWith("id: "));
      // The change after Last-Event-ID, then one that commits while the stream is open.
      await landStream(pool, p, lines([{ id: "3", t: "2026-10-01T12:31:00Z", k: "a", v: 3 }]), "stream");
      await runBatch(pool, p, "once");
      while (events().length < 2) text += new TextDecoder().decode((await reader.read()).value);
      ctl.abort();
      const got = events().map((e) => {
        const [id, kind, data] = e.split("\n");
        return { id: Number(id!.slice(4)), kind, change: JSON.parse(data!.slice(6)) as FeedChange };
      });
      const now = (await readChanges(pool, p.name, 0, 10)).changes;
      expect(got).toEqual([
        { id: now[1]!.id, kind: "event: change", change: now[1] },
        { id: now[2]!.id, kind: "event: change", change: now[2] },
      ]);
      expect(heard).toEqual([p.name, p.name]);

      // The service's stop ends open streams (its server would otherwise wait for them).
      const open = await fetch(`${api.base}/pipelines/${p.name}/changes/stream?after=${now[2]!.id}`);
      const openReader = open.body!.getReader();
      expect(new TextDecoder().decode((await openReader.read()).value)).toBe(": straggler change feed\n\n");
      endChangeStreams();
      expect((await openReader.read()).done).toBe(true);

      const disabled = await fetch(`${api.base}/pipelines/${off.name}/changes`);
      expect([disabled.status, (await disabled.json()).error]).toEqual([409, "feed_disabled"]);
      const bad = await fetch(`${api.base}/pipelines/${p.name}/changes?after=-1`);
      expect(bad.status).toBe(400);

      // Pruned past every window: a read after an id below the pruned one is refused, after it answers.
      expect(await pruneChanges(pool, p.name, "2026-10-02T00:00:00Z")).toBe(3);
      const gone = await fetch(`${api.base}/pipelines/${p.name}/changes?after=${now[1]!.id}`);
      expect([gone.status, (await gone.json()).error]).toEqual([410, "feed_pruned"]);
      const fromPruned = await fetch(`${api.base}/pipelines/${p.name}/changes?after=${now[2]!.id}`);
      expect((await fromPruned.json()).changes).toEqual([]);
    } finally {
      listener.release();
      await api.close();
    }
  });
});
