import { describe, expect, test } from "bun:test";
import type { ServerStatsSnapshot } from "./counters.ts";
import { continuityProblem, spread, sumStats } from "./instances.ts";

function snapshot(overrides: Record<string, unknown>): ServerStatsSnapshot {
  return {
    requests: 0,
    dbQueries: 0,
    reads: 0,
    readDbQueries: 0,
    writes: 0,
    distinctKeys: 0,
    probes: 0,
    probeDbQueries: 0,
    cacheErrors: 0,
    tiers: {},
    ...overrides,
  } as ServerStatsSnapshot;
}

describe("several instances' /stats as one", () => {
  test("counts and tiers are summed, a peak is the largest, a count one instance lacks is left out", () => {
    const a = snapshot({
      requests: 10,
      reads: 8,
      readDbQueries: 3,
      distinctKeys: 5,
      shed: 1,
      dbWaitingPeak: 4,
      dbWaiting: null,
      loadWaits: 2,
      strategy: "two_tier",
      instanceId: "a",
      tiers: { l1: { hits: 5, misses: 3 }, l2: { hits: 1, misses: 2 } },
    });
    const b = snapshot({
      requests: 20,
      reads: 18,
      readDbQueries: 4,
      distinctKeys: 6,
      shed: 2,
      dbWaitingPeak: 7,
      dbWaiting: null,
      strategy: "two_tier",
      instanceId: "b",
      tiers: { l1: { hits: 10, misses: 8 }, l2: { hits: 3, misses: 5 } },
    });
    const sum = sumStats([a, b]) as unknown as Record<string, unknown>;
    expect(sum.requests).toBe(30);
    expect(sum.reads).toBe(26);
    expect(sum.readDbQueries).toBe(7);
    expect(sum.distinctKeys).toBe(11);
    expect(sum.shed).toBe(3);
    expect(sum.dbWaitingPeak).toBe(7);
    expect(sum.dbWaiting).toBeNull();
    expect("loadWaits" in sum).toBe(false); // b has none: unknown, never a + 0
    expect(sum.strategy).toBe("two_tier");
    expect(sum.instanceId).toBe("a,b");
    expect(sum.tiers).toEqual({ l1: { hits: 15, misses: 11 }, l2: { hits: 4, misses: 7 } });
    expect(sumStats([a])).toBe(a);
    expect(() => sumStats([])).toThrow("no snapshot");
  });

  test("the spread keeps each instance's delta, and is null with one instance or a missing count", () => {
    const before = { sum: snapshot({}), each: [snapshot({ requests: 5 }), snapshot({ requests: 1 })] };
    const after = { sum: snapshot({}), each: [snapshot({ requests: 105 }), snapshot({ requests: 91 })] };
    expect(spread(before, after, "requests")).toBe("100/90");
    expect(spread(before, after, "shed")).toBeNull();
    expect(
      spread({ ...before, each: [snapshot({})] }, { ...after, each: [snapshot({})] }, "requests"),
    ).toBeNull();
  });
});

describe("one process's counters between two snapshots", () => {
  const group = (...each: Record<string, unknown>[]) => {
    const snapshots = each.map(snapshot);
    return { sum: sumStats(snapshots), each: snapshots };
  };
  test("the same instance, never reset: no problem", () => {
    const before = group({ instanceId: "a", resets: 1 }, { instanceId: "b", resets: 0 });
    const after = group({ instanceId: "a", resets: 1, requests: 9 }, { instanceId: "b", resets: 0 });
    expect(continuityProblem(before, after)).toBeNull();
  });
  test("an instance that restarted (a new instanceId) is named", () => {
    const before = group({ instanceId: "a" }, { instanceId: "b" });
    const after = group({ instanceId: "a" }, { instanceId: "c" });
    expect(continuityProblem(before, after)).toBe(
      "the server restarted during the run (instance 2 of 2): its counters are another process's",
    );
  });
  test("a reset (POST /admin/reset) between them is named", () => {
    expect(
      continuityProblem(group({ instanceId: "a", resets: 0 }), group({ instanceId: "a", resets: 1 })),
    ).toBe("the server was reset during the run: its cache and counters started over");
  });
});
