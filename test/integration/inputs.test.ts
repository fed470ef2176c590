/**
 * Several inputs, one watermark policy (docs/DESIGN.md "Several inputs"): each
 * input's watermark is its max accepted event time − its own delay; the
 * pipeline's is the min (Spark's default) or the max of them, idle inputs left
 * out after `watermark.idleTimeout` (ingestion time), never backwards, and
 * every input's watermark survives a restart. Ingestion times come from the
 * events (`it`), so idleness is decided on exact instants.
 */
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import type { RawRecord } from "../../src/core/admission.js";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { runBatch, type BatchResult } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { hhmm, windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** A pipeline summing `v` per 10-minute window; `watermark` as given; ingestion time from `it`. */
function twoInputs(name: string, watermark: Record<string, unknown>): PipelineConfig {
  return pipeline({
    name,
    source: { format: "jsonl" },
    fields: { eventId: "id", eventTime: "t", ingestionTime: "it", value: "v" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark,
  });
}

const at = (hm: string) => `2026-10-01T${hm}:00Z`;
let sources = 0;

/** Lands events `[id, event hh:mm, value, ingestion hh:mm]` as one source of `input`. */
async function land(
  pool: Pool,
  p: PipelineConfig,
  input: string,
  events: [string, string, number, string][],
): Promise<void> {
  async function* records(): AsyncGenerator<RawRecord> {
    let line = 0;
    for (const [id, t, v, it] of events) {
      const fields = { id, t: at(t), v: String(v), it: at(it) };
      yield { line: ++line, raw: JSON.stringify(fields), fields };
    }
  }
  const r = await landRecords(pool, p, `test:${++sources}`, records(), {
    landingTimeMs: Date.parse(at("12:00")),
    input,
  });
  expect([r.accepted, r.quarantined]).toEqual([events.length, 0]);
}

async function batch(pool: Pool, p: PipelineConfig): Promise<BatchResult> {
  const b = await runBatch(pool, p, "once");
  expect(b).not.toBeNull();
  return b!;
}

/** The inputs of a batch's progress as `input max→watermark[ idle]` in hh:mm. */
const inputsOf = (b: BatchResult) =>
  b.inputs.map((i) => `${i.input} ${hhmm(i.maxEventTime)}→${hhmm(i.watermark)}${i.idle ? " idle" : ""}`);

async function checkpointInputs(pool: Pool, name: string) {
  const { rows } = await pool.query("SELECT inputs FROM straggler.checkpoints WHERE pipeline = $1", [name]);
  return rows[0].inputs;
}

describe("two inputs with different delays", () => {
  // a: delay 5 minutes, b: delay 25 minutes. Batch 0: a sends 12:22 and 12:36 (a's watermark 12:31),
  // b sends 12:45 (b's watermark 12:20). Batch 1: b sends 12:25, for window [12:20,12:30).
  const setup = async (policy: "min" | "max" | undefined) => {
    const { pool } = await getDb();
    const name = `two-${policy ?? "default"}`;
    const p = twoInputs(name, {
      delay: "10 minutes",
      ...(policy ? { policy } : {}),
      inputs: { a: { delay: "5 minutes" }, b: { delay: "25 minutes" } },
    });
    await land(pool, p, "a", [
      ["a1", "12:22", 1, "12:46"],
      ["a2", "12:36", 2, "12:46"],
    ]);
    await land(pool, p, "b", [["b1", "12:45", 10, "12:46"]]);
    const b0 = await batch(pool, p);
    await land(pool, p, "b", [["b2", "12:25", 100, "12:47"]]);
    const b1 = await batch(pool, p);
    return { pool, p, b0, b1 };
  };

  it("min (the default): b's watermark 12:20 holds the pipeline; b's 12:25 is on time", async () => {
    const { pool, p, b0, b1 } = await setup(undefined);
    expect(inputsOf(b0)).toEqual(["a 12:36→12:31", "b 12:45→12:20"]);
    expect(hhmm(b0.nextWatermark)).toBe("12:20");
    expect(b0.numRowsFinalized).toBe(0);
    expect([b1.numRowsDroppedByWatermark, hhmm(b1.eventTime.watermark), hhmm(b1.nextWatermark)]).toEqual([
      0,
      "12:20",
      "12:20",
    ]);
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:20,12:30)=101 open",
      "[12:30,12:40)=2 open",
      "[12:40,12:50)=10 open",
    ]);
    expect(await checkpointInputs(pool, p.name)).toEqual([
      {
        input: "a",
        maxEventTime: "2026-10-01T12:36:00.000Z",
        watermark: "2026-10-01T12:31:00.000Z",
        lastIngestionTime: "2026-10-01T12:46:00.000Z",
      },
      {
        input: "b",
        maxEventTime: "2026-10-01T12:45:00.000Z",
        watermark: "2026-10-01T12:20:00.000Z",
        lastIngestionTime: "2026-10-01T12:47:00.000Z",
      },
    ]);
  });

  it("max: a's watermark 12:31 sets the pipeline's; [12:20,12:30) is final after batch 0 and b's 12:25 is dropped", async () => {
    const { pool, p, b0, b1 } = await setup("max");
    expect(inputsOf(b0)).toEqual(["a 12:36→12:31", "b 12:45→12:20"]);
    expect(hhmm(b0.nextWatermark)).toBe("12:31");
    expect(b0.numRowsFinalized).toBe(1);
    expect([b1.numRowsDroppedByWatermark, hhmm(b1.eventTime.watermark), hhmm(b1.nextWatermark)]).toEqual([
      1,
      "12:31",
      "12:31",
    ]);
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:20,12:30)=1 final",
      "[12:30,12:40)=2 open",
      "[12:40,12:50)=10 open",
    ]);
    // The correction recomputes the dropped window from bronze; reconcile then agrees with the stream.
    const run = await runCorrection(pool, p, { trigger: "cli" });
    expect([run.status, run.windowsChanged, run.eventsRecovered]).toEqual(["succeeded", 1, 1]);
    expect(await windowSummary(pool, p.name)).toEqual([
      "[12:20,12:30)=101 corrected",
      "[12:30,12:40)=2 open",
      "[12:40,12:50)=10 open",
    ]);
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches, report.windowsChecked]).toEqual([true, [], 1]);
  });
});

describe("an idle input", () => {
  // a and b (delay 5 minutes each) both send at 12:00. Then only a sends: 12:30 at 12:30
  // (ingestion), so b has sent nothing for exactly 30 minutes. Then b comes back with 12:05 at 12:31.
  const run = async (name: string, idleTimeout: string | undefined) => {
    const { pool } = await getDb();
    const p = twoInputs(name, {
      delay: "5 minutes",
      ...(idleTimeout ? { idleTimeout } : {}),
      inputs: { a: null, b: null },
    });
    await land(pool, p, "a", [["a1", "12:00", 1, "12:00"]]);
    await land(pool, p, "b", [["b1", "12:00", 10, "12:00"]]);
    const b0 = await batch(pool, p);
    await land(pool, p, "a", [["a2", "12:30", 2, "12:30"]]);
    const b1 = await batch(pool, p);
    await land(pool, p, "b", [["b2", "12:05", 100, "12:31"]]);
    const b2 = await batch(pool, p);
    return { pool, p, b0, b1, b2 };
  };

  it("without idleTimeout, b holds the watermark at 11:55 and its 12:05 is on time", async () => {
    const { pool, p, b0, b1, b2 } = await run("idle-none", undefined);
    expect(hhmm(b0.nextWatermark)).toBe("11:55");
    expect(inputsOf(b1)).toEqual(["a 12:30→12:25", "b 12:00→11:55"]);
    expect([hhmm(b1.nextWatermark), b1.numRowsFinalized]).toEqual(["11:55", 0]);
    expect(inputsOf(b2)).toEqual(["a 12:30→12:25", "b 12:05→12:00"]);
    expect([b2.numRowsDroppedByWatermark, hhmm(b2.nextWatermark)]).toEqual([0, "12:00"]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=111 open", "[12:30,12:40)=2 open"]);
  });

  it("with idleTimeout 30 minutes, b is left out after 30 silent minutes; back, it cannot move the watermark backwards", async () => {
    const { pool, p, b0, b1, b2 } = await run("idle-30", "30 minutes");
    expect(hhmm(b0.nextWatermark)).toBe("11:55");
    expect(inputsOf(b1)).toEqual(["a 12:30→12:25", "b 12:00→11:55 idle"]);
    expect([hhmm(b1.nextWatermark), b1.numRowsFinalized]).toEqual(["12:25", 1]);
    // b is back (not idle): the min of 12:25 and 12:00 is 12:00, but the watermark stays at 12:25.
    expect(inputsOf(b2)).toEqual(["a 12:30→12:25", "b 12:05→12:00"]);
    expect([b2.numRowsDroppedByWatermark, hhmm(b2.eventTime.watermark), hhmm(b2.nextWatermark)]).toEqual([
      1,
      "12:25",
      "12:25",
    ]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=11 final", "[12:30,12:40)=2 open"]);
    const corrected = await runCorrection(pool, p, { trigger: "cli" });
    expect([corrected.status, corrected.windowsChanged, corrected.eventsRecovered]).toEqual(["succeeded", 1, 1]);
    expect(await windowSummary(pool, p.name)).toEqual(["[12:00,12:10)=111 corrected", "[12:30,12:40)=2 open"]);
    expect((await reconcile(pool, p)).mismatches).toEqual([]);
  });

  it("with idleTimeout 31 minutes, 30 silent minutes are not enough: b still holds the watermark", async () => {
    const { b1, b2 } = await run("idle-31", "31 minutes");
    expect(inputsOf(b1)).toEqual(["a 12:30→12:25", "b 12:00→11:55"]);
    expect(hhmm(b1.nextWatermark)).toBe("11:55");
    expect([b2.numRowsDroppedByWatermark, hhmm(b2.nextWatermark)]).toEqual([0, "12:00"]);
  });
});

describe("restart", () => {
  it("keeps every input's watermark: after a restart, b's 12:20 still holds the pipeline while only a sends", async () => {
    const { pool, url } = await getDb();
    const p = twoInputs("restarted", {
      delay: "10 minutes",
      inputs: { a: { delay: "5 minutes" }, b: { delay: "25 minutes" } },
    });
    await land(pool, p, "a", [["a1", "12:36", 1, "12:46"]]);
    await land(pool, p, "b", [["b1", "12:45", 10, "12:46"]]);
    expect(hhmm((await batch(pool, p)).nextWatermark)).toBe("12:20");
    // A new process: a fresh pool, nothing kept in memory.
    const fresh = createPool(url);
    try {
      await land(fresh, p, "a", [["a2", "12:40", 2, "12:50"]]);
      const b1 = await batch(fresh, p);
      expect(inputsOf(b1)).toEqual(["a 12:40→12:35", "b 12:45→12:20"]);
      expect([hhmm(b1.eventTime.watermark), hhmm(b1.nextWatermark)]).toEqual(["12:20", "12:20"]);
      const status = await fresh.query("SELECT watermark FROM straggler.checkpoints WHERE pipeline = $1", [p.name]);
      expect(status.rows).toEqual([{ watermark: "2026-10-01T12:20:00.000Z" }]);
    } finally {
      await fresh.end();
    }
  });

  it("a checkpoint written before inputs were tracked is read as the default input with its max event time and watermark", async () => {
    const { pool } = await getDb();
    const p = twoInputs("legacy", { delay: "10 minutes" });
    await land(pool, p, "default", [["e1", "12:30", 1, "12:30"]]);
    expect(hhmm((await batch(pool, p)).nextWatermark)).toBe("12:20");
    await pool.query("UPDATE straggler.checkpoints SET inputs = NULL WHERE pipeline = $1", [p.name]);
    await land(pool, p, "default", [["e2", "12:25", 2, "12:31"]]);
    const b1 = await batch(pool, p);
    expect(inputsOf(b1)).toEqual(["default 12:30→12:20"]);
    expect(b1.inputs[0]!.lastIngestionTime).toBe("2026-10-01T12:31:00.000Z");
    await land(pool, p, "default", [["e3", "12:45", 4, "12:45"]]);
    expect(hhmm((await batch(pool, p)).nextWatermark)).toBe("12:35");
  });
});
