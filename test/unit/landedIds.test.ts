/**
 * The ids a replay has landed (src/ingest/landedIds.ts): a span may skip the event-id probe only while
 * bronze holds nothing of the pipeline but the replay's own landings, and none of its ids is in the filter.
 */
import { describe, expect, it } from "vitest";
import { LandedIds } from "../../src/ingest/landedIds.js";

describe("LandedIds", () => {
  it("holds every id it was told of (no false 'new'), and tells new ids from them", () => {
    const ids = new LandedIds(100_000);
    const landed = Array.from({ length: 100_000 }, (_, i) => `e${i}`);
    expect(ids.confirms(0)).toBe(true); // an empty pipeline
    ids.landed(landed, [], 100_000);
    expect(landed.filter((id) => ids.mayBeNew([id]))).toEqual([]);
    // 100,000 ids never landed: at about one false "maybe" in 1.5 million, none here (the filter is deterministic).
    const fresh = Array.from({ length: 100_000 }, (_, i) => `e${100_000 + i}`);
    expect(fresh.filter((id) => !ids.mayBeNew([id]))).toEqual([]);
    expect(ids.mayBeNew(["x", "e5"])).toBe(false);
  });

  it("speaks for bronze only where the replay's last landing left the pipeline", () => {
    const ids = new LandedIds(10);
    expect(ids.confirms(0)).toBe(true);
    ids.landed(["a"], [], 7);
    expect(ids.confirms(7)).toBe(true);
    ids.landed(["b"], [], 9);
    // Another writer landed rows of the pipeline: given up for good.
    expect(ids.confirms(12)).toBe(false);
    expect(ids.mayBeNew(["c"])).toBe(false);
    expect(ids.confirms(9)).toBe(false);
  });

  it("holds a span's quarantined ids too: a cutover may accept such a row later, so its id is never 'new'", () => {
    const ids = new LandedIds(10);
    expect(ids.confirms(0)).toBe(true);
    ids.landed(["a"], ["q1", "line:7"], 3);
    expect([ids.mayBeNew(["b"]), ids.mayBeNew(["q1"]), ids.mayBeNew(["line:7"]), ids.mayBeNew(["a"])]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(ids.confirms(3)).toBe(true);
  });

  it("is given up by a pipeline that had rows before, quarantined ids not collected, ids not collected, or a skipped span", () => {
    const before = new LandedIds(10);
    expect(before.confirms(3)).toBe(false);
    expect(before.mayBeNew(["a"])).toBe(false);

    const quarantined = new LandedIds(10);
    quarantined.landed(["a"], null, 2);
    expect(quarantined.mayBeNew(["b"])).toBe(false);

    const notCollected = new LandedIds(10);
    notCollected.landed(null, [], 2);
    expect(notCollected.mayBeNew(["b"])).toBe(false);

    const skipped = new LandedIds(10);
    skipped.giveUp();
    expect(skipped.mayBeNew(["b"])).toBe(false);
    expect(skipped.confirms(0)).toBe(false);
  });

  it("keeps the replay's last landed (or skipped) seq as the floor of the next landing's read, also once the filter is given up", () => {
    const ids = new LandedIds(10);
    expect(ids.floor()).toBe(0);
    ids.landed(["a"], [], 7);
    expect(ids.floor()).toBe(7);
    ids.landed(["b"], [], null); // a landing with no row
    expect(ids.floor()).toBe(7);
    ids.giveUp();
    ids.landed(null, null, 12);
    expect([ids.floor(), ids.mayBeNew(["c"])]).toEqual([12, false]);
    // A span skipped (landed before) by a resumed replay: its last seq is a row of the pipeline, never lowering it.
    ids.giveUp(15);
    ids.giveUp(3);
    expect(ids.floor()).toBe(15);
  });
});
