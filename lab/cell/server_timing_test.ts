/** Tier costs between two /stats snapshots: counts from every request, times from the sampled ones. */
import { expect, test } from "bun:test";
import type { LoadTimes } from "../../server/load_timer.ts";
import { OUTCOMES, type Outcome } from "../../server/tier_timer.ts";
import type { ServerStatsSnapshot } from "./counters.ts";
import type { GroupStats } from "./instances.ts";
import { serverTimingBetween } from "./server_timing.ts";

const times = (count: number, meanMs: number, bucket: number): LoadTimes => ({
  count,
  sumMs: count * meanMs,
  meanMs: count > 0 ? meanMs : null,
  p50Ms: null,
  p99Ms: null,
  buckets: count > 0 ? [[bucket, count]] : [],
});
/** One instance's snapshot: `timed` requests timed per outcome, `counted` counted (undefined: an older server). */
function instance(timed: Partial<Record<Outcome, number>>, counted?: Partial<Record<Outcome, number>>) {
  const requestMs = Object.fromEntries(
    OUTCOMES.map((outcome) => [outcome, times(timed[outcome] ?? 0, outcome === "miss" ? 0.5 : 0.01, 100)]),
  ) as Record<Outcome, LoadTimes>;
  const requestCounts =
    counted &&
    (Object.fromEntries(OUTCOMES.map((outcome) => [outcome, counted[outcome] ?? 0])) as Record<
      Outcome,
      number
    >);
  return { requestMs, ...(requestCounts ? { requestCounts } : {}) } as unknown as ServerStatsSnapshot;
}
const group = (...each: ServerStatsSnapshot[]): GroupStats => ({ sum: each[0] as ServerStatsSnapshot, each });

test("counts are every request's, summed over the instances; means are the timed ones'", () => {
  const before = group(instance({}, {}), instance({}, {}));
  const after = group(
    instance({ l1_hit: 10, miss: 2 }, { l1_hit: 40, miss: 8 }),
    instance({ l1_hit: 5 }, { l1_hit: 20, miss: 1 }),
  );
  const timing = serverTimingBetween(before, after);
  expect(timing.counts).toEqual({ l1_hit: 60, l2_hit: 0, miss: 9, join: 0, write: 0 });
  expect(timing.requests.l1_hit?.count).toBe(15);
  expect(timing.requests.miss?.meanMs).toBe(0.5);
});

test("a server that counts nothing but what it timed gives the timed counts; one that went backwards, none", () => {
  const older = serverTimingBetween(group(instance({})), group(instance({ l1_hit: 3 })));
  expect(older.counts.l1_hit).toBe(3);
  const restarted = serverTimingBetween(
    group(instance({ l1_hit: 3 }, { l1_hit: 12 })),
    group(instance({ l1_hit: 4 }, { l1_hit: 2 })),
  );
  expect(restarted.counts.l1_hit).toBeNull();
});

test("a server from before joins were counted apart: its answered requests are the other outcomes", () => {
  const older = (n: number) => {
    const stats = instance({ l1_hit: n }, { l1_hit: n }) as unknown as { requestMs: Record<string, unknown> };
    delete stats.requestMs.join;
    return stats as unknown as ServerStatsSnapshot;
  };
  const timing = serverTimingBetween(group(older(0)), group(older(4)));
  expect(timing.answered?.count).toBe(4);
  expect(timing.requests.join).toBeNull();
});

test("a server that times and counts nothing (TIER_TIMING=0) says nothing", () => {
  const off = serverTimingBetween(group(instance({}, {})), group(instance({}, {})));
  expect(off.counts).toEqual({ l1_hit: null, l2_hit: null, miss: null, join: null, write: null });
  expect(off.answered).toBeNull();
});
