import { describe, expect, it } from "vitest";
import { fairShare, preferenceOrder } from "../../src/cluster/leases.js";
import { loadEnv } from "../../src/config/env.js";

describe("pipeline leases: share and order", () => {
  it("a replica's share is ceil(pipelines / live replicas), at least one replica counted", () => {
    expect([
      fairShare(2, 3),
      fairShare(3, 2),
      fairShare(4, 2),
      fairShare(5, 1),
      fairShare(5, 0),
      fairShare(0, 3),
    ]).toEqual([1, 2, 2, 5, 5, 0]);
  });

  it("replicas try the pipelines from different offsets of the sorted names", () => {
    const names = ["c", "a", "d", "b"];
    // The offset is the id's 31-hash modulo the count: "r1" = 114 * 31 + 49 = 3583 → 3; "r2" 3584 → 0; "r3" 3585 → 1.
    expect(preferenceOrder(names, "r1")).toEqual(["d", "a", "b", "c"]);
    expect(preferenceOrder(names, "r2")).toEqual(["a", "b", "c", "d"]);
    expect(preferenceOrder(names, "r3")).toEqual(["b", "c", "d", "a"]);
    expect(preferenceOrder([], "r1")).toEqual([]);
  });
});

describe("replica settings", () => {
  it("STRAGGLER_LEASE_HEARTBEAT is a duration from 100 ms to 1 minute, 1 s by default; STRAGGLER_REPLICA_ID is 1-45 printable characters", () => {
    expect(loadEnv({}).STRAGGLER_LEASE_HEARTBEAT).toBe(1000);
    expect(loadEnv({ STRAGGLER_LEASE_HEARTBEAT: "500 milliseconds" }).STRAGGLER_LEASE_HEARTBEAT).toBe(500);
    expect(() => loadEnv({ STRAGGLER_LEASE_HEARTBEAT: "50 milliseconds" })).toThrow(
      "STRAGGLER_LEASE_HEARTBEAT: expected a duration from 100 milliseconds to 1 minute",
    );
    expect(() => loadEnv({ STRAGGLER_LEASE_HEARTBEAT: "1s" })).toThrow(/STRAGGLER_LEASE_HEARTBEAT: .*seconds/);
    expect(loadEnv({ STRAGGLER_REPLICA_ID: "node-1" }).STRAGGLER_REPLICA_ID).toBe("node-1");
    expect(() => loadEnv({ STRAGGLER_REPLICA_ID: "node 1" })).toThrow(
      "STRAGGLER_REPLICA_ID: expected 1 to 45 printable ASCII characters without spaces",
    );
  });
});
