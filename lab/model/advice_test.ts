import { describe, expect, test } from "bun:test";
import { type AdviseInputs, advise, crossovers } from "./advice.ts";
import { baseRows, srvRow } from "./model_testing.ts";
import { allCosts } from "./tier_costs.ts";

const costs = allCosts(baseRows()).costs;
const inputs: AdviseInputs = {
  missCostMs: 0,
  redisRttMs: 0,
  hitRatio: 0.8,
  l1HitRatio: 0.8,
  hitSource: "test",
  rateRps: 1000,
  instances: 1,
  writeRatio: 0,
  stalenessBudgetMs: null,
  redisEntries: null,
  pgPoolMax: 10,
  cores: 2,
  p99TargetMs: 100,
  checkRateRps: null,
  askedMissCostMs: null,
  askedRedisRttMs: null,
};
const mean = (advice: ReturnType<typeof advise>, s: string) =>
  advice.ranked.find((r) => r.strategy === s)?.predictedMeanMs as number;

describe("advise", () => {
  test("a cheap miss and a far Redis: redis predicted slower than none", () => {
    const advice = advise(costs, { ...inputs, missCostMs: 0.05, redisRttMs: 2 });
    // none 0.8 + 0.05; redis 0.8 × 2.2 + 0.2 × (1.0 + 0.05 + 4)
    expect(mean(advice, "none")).toBeCloseTo(0.85, 9);
    expect(mean(advice, "redis")).toBeCloseTo(2.77, 9);
    expect(mean(advice, "redis")).toBeGreaterThan(mean(advice, "none"));
  });

  test("a dear miss and a near Redis: redis faster than none, local fastest", () => {
    const advice = advise(costs, {
      ...inputs,
      missCostMs: 20,
      redisRttMs: 0.5,
      askedMissCostMs: 20.7,
      askedRedisRttMs: 0.55,
    });
    expect(mean(advice, "redis")).toBeLessThan(mean(advice, "none"));
    expect(advice.pick).toBe("local");
    expect(advice.ranked.map((r) => r.strategy)).toEqual(["local", "two_tier", "redis", "none"]);
    // The check runs the user's own figures, as asked.
    expect(advice.checkCommand).toBe("bun run experiment quickstart --miss-cost-ms 20.7 --redis-rtt-ms 0.55");
  });

  test("tracking is predicted at its own L1 share when the base run has it, at the shared one otherwise", () => {
    // tracking's costs as two_tier's (L1 0.02, L2 0.25, miss 1.05 ms): only the shares differ.
    const trackingRow = srvRow("two_tier", { strategy: "tracking", l1_hit_ratio_expected: 0.5 });
    const withTracking = allCosts([...baseRows(), trackingRow]).costs;
    const shared = advise(withTracking, { ...inputs, l1HitRatio: 0.7 });
    expect(mean(shared, "tracking")).toBeCloseTo(mean(shared, "two_tier"), 9);
    const own = advise(withTracking, { ...inputs, l1HitRatio: 0.7, trackingL1HitRatio: 0.5 });
    // 0.2 more of the reads move from an L1 hit (0.02 ms) to an L2 hit (0.25 ms).
    expect(mean(own, "tracking") - mean(own, "two_tier")).toBeCloseTo(0.2 * (0.25 - 0.02), 9);
  });

  test("several instances and a budget of 0: tracking is out (its L1 can outlive an invalidation up to its TTL)", () => {
    const trackingRow = srvRow("two_tier", { strategy: "tracking", l1_ttl_ms: 5_000 });
    const withTracking = allCosts([...baseRows(), trackingRow]).costs;
    const advice = advise(withTracking, { ...inputs, instances: 2, stalenessBudgetMs: 0 });
    const tracking = advice.ranked.find((r) => r.strategy === "tracking");
    expect(tracking?.stalenessBoundMs).toBe(5_000);
    expect(tracking?.excluded).toContain("staleness bound 5000 ms over the budget 0 ms");
    expect(advice.pick).toBe("redis");
    // One instance: nothing to be stale against.
    const one = advise(withTracking, { ...inputs, stalenessBudgetMs: 0 });
    expect(one.ranked.find((r) => r.strategy === "tracking")?.excluded).toBeNull();
  });

  test("two_tier with no Redis hits timed in its base cells borrows redis's (the same GET), and says so", () => {
    const rows = baseRows().map((row) =>
      row.strategy === "two_tier" ? { ...row, srv_l2_hit_count: 3, srv_l2_hit_mean_ms: 9 } : row,
    );
    const advice = advise(allCosts(rows).costs, { ...inputs, l1HitRatio: 0.7 });
    // 0.7 × 0.02 + 0.1 × 0.2 (redis's Redis hit) + 0.2 × 1.05
    expect(mean(advice, "two_tier")).toBeCloseTo(0.014 + 0.02 + 0.21, 9);
    expect(advice.notes.join("\n")).toContain("two_tier: its base cells timed too few Redis hits");
    expect(advice.skipped).toEqual(["tracking: not in the base run"]);
  });

  test("crossovers: redis = none where 0.37 + 1.2·R = 0.85, at R = 0.4 ms", () => {
    const advice = advise(costs, { ...inputs, missCostMs: 0.05 });
    const found = advice.crossovers.filter(
      (c) => c.axis === "redis_rtt_ms" && [c.belowFaster, c.aboveFaster].sort().join() === "none,redis",
    );
    expect(found).toEqual([
      {
        axis: "redis_rtt_ms",
        belowFaster: "redis",
        aboveFaster: "none",
        atMs: expect.closeTo(0.4, 9),
        meanMs: expect.closeTo(0.85, 9),
      },
    ]);
    // Beyond the axis's range, no crossover.
    const preds = advice.ranked
      .filter((r) => r.strategy === "redis" || r.strategy === "none")
      .map((r) => r.prediction);
    expect(crossovers(preds, "redis_rtt_ms", 0.3, { ...inputs, missCostMs: 0.05 })).toEqual([]);
    // The sweep is the same line: at R = 0.4 the two meet.
    const at = advice.sweeps.redis_rtt_ms.filter((p) => Math.abs(p.xMs - 0.4) < 1e-9);
    expect(at.find((p) => p.strategy === "redis")?.meanMs).toBeCloseTo(0.85, 9);
    expect(advice.sweepMaxMs).toEqual({ redis_rtt_ms: 2, miss_cost_ms: 20 });
  });

  test("database queries/s and Redis commands per request", () => {
    const advice = advise(costs, { ...inputs, writeRatio: 0.1, rateRps: 2000 });
    const redis = advice.ranked.find((r) => r.strategy === "redis");
    // 2000 × (0.9 × 0.2 + 0.1)
    expect(redis?.dbQps).toBeCloseTo(560, 9);
    // 0.9 × 0.8 × 1 + 0.9 × 0.2 × 3 + 0.1 × 3 deletes
    expect(redis?.redisCmdsPerRequest).toBeCloseTo(0.72 + 0.54 + 0.3, 9);
    expect(advice.ranked.find((r) => r.strategy === "none")?.dbQps).toBe(2000);
    expect(advice.notes.some((n) => n.startsWith("redis write: no writes in the base rows"))).toBe(true);
  });

  test("a staleness budget under local's TTL rules local out with several instances, not with one", () => {
    const budget = { ...inputs, missCostMs: 20, stalenessBudgetMs: 1_000 };
    const several = advise(costs, { ...budget, instances: 3 });
    expect(several.pick).toBe("redis");
    expect(several.conditions[0]).toBe(
      "local excluded: staleness bound 60000 ms over the budget 1000 ms with 3 instances: each instance's copy until its TTL (cache_ttl_ms 60000)",
    );
    expect(several.conditions[1]).toStartWith("two_tier excluded: staleness bound 5000 ms");
    expect(advise(costs, { ...budget, stalenessBudgetMs: 10_000, instances: 3 }).pick).toBe("two_tier");
    expect(advise(costs, { ...budget, instances: 1 }).pick).toBe("local");
  });

  test("Redis memory: bytes per entry × the trace's keys, or the base run's entries, said", () => {
    const mine = advise(costs, { ...inputs, redisEntries: 1000 }).ranked.find((r) => r.strategy === "redis");
    expect(mine?.redisMemoryBytes).toBe(350_000);
    expect(mine?.redisMemory).toBe("350 B/entry (base run) × 1000 entries (the trace's keys)");
    const theirs = advise(costs, inputs).ranked.find((r) => r.strategy === "two_tier");
    expect(theirs?.redisMemoryBytes).toBe(3_150_000);
    expect(advise(costs, inputs).ranked.find((r) => r.strategy === "local")?.redisMemoryBytes).toBeNull();
  });

  test("a strategy without a cost is left out with its reason", () => {
    const thin = allCosts([
      ...baseRows().filter((r) => r.strategy !== "redis"),
      srvRow("redis", { srv_l2_hit_count: 2 }),
    ]).costs;
    const advice = advise(thin, inputs);
    expect(advice.ranked.map((r) => r.strategy)).not.toContain("redis");
    expect(advice.skipped).toEqual([
      "redis: no l2_hit cost: fewer than 30 l2_hit requests in every valid repeat (at most 2)",
      "tracking: not in the base run", // the test's base rows are the four older strategies'
    ]);
  });
});
