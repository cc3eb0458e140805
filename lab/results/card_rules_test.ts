import { describe, expect, test } from "bun:test";
import { addedRttMs, breakEvens, checkSibling, type TierCosts, tierCosts } from "./card_breakeven.ts";
import {
  compareSamples,
  type Figures,
  percentChange,
  type RunContext,
  rank,
  recommend,
  tradeLine,
} from "./card_rules.ts";

function figures(strategy: string, overrides: Partial<Figures> = {}): Figures {
  return {
    strategy,
    repeats: 3,
    p50Ms: [10, 11, 12],
    p99Ms: [40, 42, 44],
    rps: [1_000, 1_010, 1_020],
    meanMs: 12,
    hitRatio: 0,
    hitRatioExpected: 0,
    hitRatioOptimal: null,
    l1HitRatio: null,
    l2HitRatio: null,
    dbQueriesPerS: 1_000,
    errorRatio: 0,
    shed: 0,
    cpuMsPer1kRequests: 100,
    rssPeakMb: 80,
    redisEntries: null,
    redisBytesPerEntry: null,
    stalenessP99Ms: null,
    missCostMs: 1,
    ...overrides,
  };
}

const ONE: RunContext = { closed: false, instances: 1, writes: false, cacheTtlMs: 60_000 };
const local = figures("local", {
  p50Ms: [1, 1.2, 1.4],
  p99Ms: [10, 11, 12],
  hitRatio: 0.9,
  dbQueriesPerS: 100,
});

describe("compareSamples", () => {
  test("disjoint intervals order, overlapping ones are ~, fewer than 3 repeats have no confidence", () => {
    expect(compareSamples([1, 2, 3], [4, 5, 6])).toBe("lower");
    expect(compareSamples([4, 5, 6], [1, 2, 3])).toBe("higher");
    expect(compareSamples([1, 2, 4], [4, 5, 6])).toBe("~");
    expect(compareSamples([1], [4, 5, 6])).toBe("no confidence");
  });
});

describe("rank", () => {
  test("orders by median p99 and marks each step <, ~ or ?", () => {
    const ranked = rank([figures("none"), local, figures("redis", { p99Ms: [39, 41, 45] })]);
    expect(ranked.map((r) => r.figures.strategy)).toEqual(["local", "redis", "none"]);
    expect(ranked.map((r) => r.next)).toEqual(["<", "~", null]);
    expect(rank([local, figures("none", { p99Ms: [40], repeats: 1 })])[0]?.next).toBe("?");
  });
});

describe("tradeLine", () => {
  const none = figures("none");
  test("latency and DB against none; ~ when the intervals overlap", () => {
    expect(percentChange(50, 100)).toBe("−50%");
    expect(tradeLine(local, none, ONE)).toBe("local: p50 −89%, p99 −74%, DB −90%");
    const close = figures("redis", { p50Ms: [9, 10, 13], dbQueriesPerS: 500 });
    expect(tradeLine(close, none, ONE)).toContain("p50 ~ (−9%, within the repeats' noise)");
  });

  test("memory only when ≥ 10% higher, CPU when ≥ 10% different", () => {
    expect(tradeLine({ ...local, rssPeakMb: 85 }, none, ONE)).not.toContain("memory");
    expect(tradeLine({ ...local, rssPeakMb: 100 }, none, ONE)).toContain("memory +20 MB RSS");
    expect(tradeLine({ ...local, cpuMsPer1kRequests: 95 }, none, ONE)).not.toContain("CPU");
    expect(tradeLine({ ...local, cpuMsPer1kRequests: 60 }, none, ONE)).toContain("CPU/1k req −40%");
  });

  test("Postgres and Redis's CPU per 1k requests apart from the server's, when both sides have it and it moved ≥ 10%", () => {
    const base = { ...none, servicesCpuMsPer1kRequests: 50 };
    expect(tradeLine({ ...local, servicesCpuMsPer1kRequests: 10 }, base, ONE)).toContain(
      "Postgres + Redis CPU/1k req −80%",
    );
    expect(tradeLine({ ...local, servicesCpuMsPer1kRequests: 48 }, base, ONE)).not.toContain("Postgres");
    expect(tradeLine({ ...local, servicesCpuMsPer1kRequests: 10 }, none, ONE)).not.toContain("Postgres");
  });

  test("Redis's memory only where Redis holds entries", () => {
    expect(tradeLine(local, none, ONE)).not.toContain("Redis");
    expect(tradeLine({ ...local, redisEntries: 0, redisBytesPerEntry: null }, none, ONE)).not.toContain(
      "Redis",
    );
    const redis = figures("redis", { redisEntries: 10_000, redisBytesPerEntry: 420 });
    expect(tradeLine(redis, none, ONE)).toContain("Redis 4.0 MB for 10,000 entries (420 B each)");
  });

  test("staleness only with writes and several instances; errors and shed when any", () => {
    const stale = { ...local, stalenessP99Ms: 2_010 };
    expect(tradeLine(stale, none, { ...ONE, writes: true })).not.toContain("stale");
    expect(tradeLine(stale, none, { ...ONE, writes: true, instances: 4 })).toContain(
      "with 4 instances stale for p99 2010 ms after a write",
    );
    expect(tradeLine(stale, none, { ...ONE, writes: false, instances: 4 })).not.toContain("stale");
    expect(tradeLine({ ...local, errorRatio: 0.02, shed: 3 }, none, ONE)).toContain("errors 2.00%, shed 3");
    expect(tradeLine({ ...local, shed: 3, shedEventLoop: 2 }, none, ONE)).toContain(
      "shed 3 (2 on event-loop delay)",
    );
  });
});

describe("recommend", () => {
  const none = figures("none");
  const twoTier = figures("two_tier", { p99Ms: [11, 12, 13], dbQueriesPerS: 100 });

  test("the lowest p99 wins; a strategy with errors over 1% or shed is excluded", () => {
    expect(recommend([none, local], ONE).pick).toBe("local");
    const failing = recommend([none, { ...local, errorRatio: 0.02 }], ONE);
    expect(failing).toMatchObject({ pick: "none", excluded: ["local"] });
    expect(recommend([none, { ...local, shed: 1 }], ONE).pick).toBe("none");
  });

  test("closed model: the highest throughput wins even with the higher p99, and the order reads >", () => {
    // At 32 connections the cache answers 1.5× the requests, so more of them queue: its p99 is the higher.
    const fast = figures("two_tier", { rps: [1_500, 1_520, 1_540], p99Ms: [50, 52, 54] });
    expect(recommend([none, fast], ONE).pick).toBe("none");
    expect(recommend([none, fast], { ...ONE, closed: true }).pick).toBe("two_tier");
    expect(rank([none, fast], true).map((r) => [r.figures.strategy, r.next])).toEqual([
      ["two_tier", ">"],
      ["none", null],
    ]);
    // Within the repeats' noise on throughput: a tie, whatever the p99s say.
    const close = figures("redis", { rps: [1_005, 1_015, 1_030], p99Ms: [60, 61, 62] });
    expect(recommend([none, close], { ...ONE, closed: true })).toMatchObject({
      pick: "redis",
      tied: ["none"],
    });
  });

  test("overlapping p99 intervals are ties; one repeat has no confidence", () => {
    expect(recommend([none, local, twoTier], ONE).tied).toEqual(["two_tier"]);
    expect(recommend([none, local, { ...twoTier, p99Ms: [20, 21, 22] }], ONE).tied).toEqual([]);
    expect(recommend([none, local], ONE).noConfidence).toBeNull();
    const once = recommend(
      [
        { ...none, repeats: 1, p99Ms: [40] },
        { ...local, repeats: 1, p99Ms: [10] },
      ],
      ONE,
    );
    expect(once).toMatchObject({
      pick: null,
      tied: [],
      conditions: [],
      noConfidence: "no confidence: 1 repeat",
    });
    // The best with 3 repeats is picked, its comparison with a thin one said; the best with 2 is not.
    const thin = recommend([{ ...none, repeats: 1, p99Ms: [40] }, local], ONE);
    expect(thin).toMatchObject({
      pick: "local",
      noConfidence: "not compared with confidence: none (1 repeat valid)",
    });
    expect(recommend([none, { ...local, repeats: 2, p99Ms: [10, 11] }], ONE)).toMatchObject({
      pick: null,
      noConfidence: "no confidence: 2 repeats",
    });
  });

  test("one instance: local's pick carries the several-instances condition naming two_tier and the TTL", () => {
    expect(recommend([none, local, twoTier], ONE).conditions[0]).toBe(
      "two_tier if you run more than one instance and need staleness under its TTL, 60000 ms (each local copy is stale until it expires; measured here with 1 instance); otherwise local",
    );
    expect(recommend([none, local], ONE).conditions).toEqual([]);
  });

  test("one instance: the coherent in-process cache ranked better is named (tracking over two_tier), redis only without either", () => {
    const tracking = { ...twoTier, strategy: "tracking", p99Ms: [11, 11.5, 12] };
    const slowTracking = { ...tracking, p99Ms: [60, 61, 62] };
    const named = (list: Figures[]) => recommend(list, ONE).conditions[0]?.split(" ")[0];
    expect(named([none, local, twoTier, tracking])).toBe("tracking");
    expect(named([none, local, twoTier, slowTracking])).toBe("two_tier");
    expect(named([none, local, figures("redis", { p99Ms: [15, 16, 17] }), slowTracking])).toBe("tracking");
    expect(named([none, local, figures("redis", { p99Ms: [15, 16, 17] })])).toBe("redis");
  });

  test("several instances with writes: a fresher strategy is the condition", () => {
    const several: RunContext = { closed: false, instances: 4, writes: true, cacheTtlMs: 2_000 };
    const staleLocal = { ...local, stalenessP99Ms: 2_010 };
    expect(recommend([none, staleLocal, { ...twoTier, stalenessP99Ms: 3 }], several).conditions).toEqual([
      "two_tier if you need staleness under 2010 ms (its p99 3 ms); otherwise local",
    ]);
    // none, never stale and ranked above two_tier here, is not the cache to move to.
    const freshNone = { ...none, p99Ms: [11, 11.5, 12], stalenessP99Ms: 0 };
    expect(
      recommend([freshNone, staleLocal, { ...twoTier, p99Ms: [30, 31, 32], stalenessP99Ms: 3 }], several)
        .conditions[0],
    ).toBe("two_tier if you need staleness under 2010 ms (its p99 3 ms); otherwise local");
    expect(recommend([none, staleLocal, { ...twoTier, stalenessP99Ms: 2_500 }], several).conditions).toEqual(
      [],
    );
  });

  test("a winner that spares no database gets the DB condition", () => {
    const fastNone = figures("none", { p99Ms: [5, 6, 7] });
    const redis = figures("redis", { dbQueriesPerS: 200 });
    expect(recommend([fastNone, redis], ONE).conditions).toEqual([
      "redis if the database is the constraint (DB −80% vs none); otherwise none",
    ]);
    expect(recommend([fastNone, { ...redis, dbQueriesPerS: 900 }], ONE).conditions).toEqual([]);
  });
});

describe("break-evens", () => {
  const costs: TierCosts = { l1Ms: 1, redisHitMs: 2, missMs: 5, hit: 0.8, source: "test" };

  test("tier costs need hit ratios over 0.5 and none, local and redis", () => {
    const none = figures("none");
    const redis = figures("redis", { p50Ms: [2, 2, 2], hitRatio: 0.8 });
    expect(tierCosts([none, local, redis])).toEqual({
      l1Ms: 1.2,
      redisHitMs: 2,
      missMs: 11,
      hit: 0.8,
      source: "client p50s (fallback: these rows have no srv_* columns)",
    });
    expect(tierCosts([none, local, { ...redis, hitRatio: 0.4 }])).toContain("not a Redis hit");
    expect(tierCosts([none, local])).toBe("needs valid none, local and redis rows");
    // A local p50 above redis's is noise, not an L1 hit's cost: no break-even from it.
    expect(tierCosts([none, { ...local, p50Ms: [2.5, 2.6, 2.7] }, redis])).toBe(
      "the p50s are not ordered L1 hit < Redis hit < miss (local 2.60 ms, redis 2.00 ms, none 11.00 ms): the run's noise is larger than a tier's cost",
    );
  });

  test("E* = h·(t_miss − t_L1) ÷ (2 − h) and D* = E·(2 − h) ÷ h; the verdict flips when E crosses E*", () => {
    const [extra, load] = breakEvens(costs);
    // E = 1, D = 4, h = 0.8: E* = 0.8 × 4 ÷ 1.2, D* = 1 × 1.2 ÷ 0.8.
    expect(extra?.valueMs).toBeCloseTo(3.2 / 1.2, 9);
    expect(extra?.name).toBe("extra cost of a Redis hit beyond which redis stops saving latency over none");
    expect(extra?.verdict).toContain("below, redis saves latency");
    expect(load?.valueMs).toBeCloseTo(1.5, 9);
    expect(load?.verdict).toContain("above, redis saves latency");
    const far = breakEvens({ ...costs, redisHitMs: 4.5 });
    expect(far[0]?.verdict).toContain("at or above, redis saves the database, not latency");
    expect(far[1]?.verdict).toContain("at or below, redis does not");
  });

  test("a sibling's rows agree or disagree with the shifted prediction", () => {
    const sibling = { name: "proxy_1ms", addedRedisRttMs: 2, addedLoadMs: 2, redisMeanMs: 6, noneMeanMs: 7 };
    // E 1 + 2 = 3, 3 × (2 − 0.8) = 3.6 < 0.8 × (4 + 2) = 4.8: predicted to save; measured 6 < 7: agree.
    expect(checkSibling(costs, sibling)).toContain("rows agree");
    expect(checkSibling(costs, { ...sibling, redisMeanMs: 8 })).toContain("rows DISAGREE");
    expect(checkSibling(costs, { ...sibling, addedRedisRttMs: 6, redisMeanMs: 8 })).toContain("rows agree");
    expect(addedRttMs("toxiproxy +0.25 ms each way")).toBe(0.5);
    expect(addedRttMs("direct")).toBe(0);
    expect(addedRttMs("elsewhere")).toBeNull();
  });
});
