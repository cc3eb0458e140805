import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import type { Redis } from "ioredis";
import { counted, countedLocal } from "../../strategies/_counted.ts";
import * as local from "../../strategies/local.ts";
import * as redisStrategy from "../../strategies/redis.ts";
import { ioredisCommands } from "../../strategies/redis_ioredis.ts";
import * as twoTier from "../../strategies/two_tier.ts";
import type { KeyPlan } from "../plan/attack_plan.ts";
import { keySampler, rankProbabilities, seededRandom } from "../plan/targets.ts";
import { eventually, testRedis, uniquePrefix } from "../shared/testing.ts";
import type { SimSettings } from "./cache_models.ts";
import { categoryOf, dealt, details, measuredCounters, requestTrace, settingsFor } from "./sim_testing.ts";
import { fromTargets, type SimRequest, simulate } from "./simulate.ts";

afterEach(() => {
  setSystemTime();
});

describe("simulate against the real strategies", () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await testRedis();
  });
  afterAll(() => {
    redis.disconnect();
  });

  function expectSame(
    real: Awaited<ReturnType<typeof measuredCounters>>,
    warmup: SimRequest[],
    measured: SimRequest[],
    settings: SimSettings,
  ): void {
    const simulated = simulate(warmup, measured, settings);
    expect(real.errors).toBe(0);
    expect(simulated.tiers).toEqual(real.tiers);
    expect(simulated.loads).toBe(real.loads);
    expect(simulated.dbQueries).toBe(real.dbQueries);
  }

  for (const seed of [1, 2]) {
    test(`simulate matches local's counters exactly, lists, writes and expiry included (seed ${seed})`, async () => {
      const settings = settingsFor("local", { cacheTtlMs: 40 });
      const warmup = requestTrace({ seed, count: 3_000, keyspace: 200, startMs: 0, maxStepMs: 3 });
      const last = warmup.at(-1)?.atMs ?? 0;
      const measured = requestTrace({
        seed: seed + 100,
        count: 3_000,
        keyspace: 200,
        startMs: last,
        maxStepMs: 3,
      });
      const cache = countedLocal((onEvent) =>
        local.createCache({ maxSize: settings.l1MaxEntries, ttlMs: settings.cacheTtlMs, onEvent }),
      );
      const real = await measuredCounters(cache, warmup, measured, settings.rows);
      await cache.close();
      expectSame(real, warmup, measured, settings);
      expect(real.tiers.local?.hits).toBeGreaterThan(500);
    });
  }

  test("simulate matches redis's counters exactly against real Redis", async () => {
    // The TTL outlives the test in both clocks: Redis keeps its own time, which setSystemTime cannot move.
    const settings = settingsFor("redis");
    const warmup = requestTrace({ seed: 3, count: 1_500, keyspace: 200, startMs: 0, maxStepMs: 3 });
    const last = warmup.at(-1)?.atMs ?? 0;
    const measured = requestTrace({ seed: 4, count: 1_500, keyspace: 200, startMs: last, maxStepMs: 3 });
    const cache = counted((onEvent) =>
      redisStrategy.createCache({
        redis: ioredisCommands(redis),
        ttlMs: settings.cacheTtlMs,
        prefix: uniquePrefix("sim"),
        onEvent,
      }),
    );
    const real = await measuredCounters(cache, warmup, measured, settings.rows);
    await cache.close();
    expectSame(real, warmup, measured, settings);
    expect(real.tiers.redis?.hits).toBeGreaterThan(500);
  });

  test("simulate matches two_tier's counters exactly: L1 expiry, L2 backfill, invalidation", async () => {
    // L1 runs on the controlled clock (a short maxAge exercises the L2 backfill); L2's TTL outlives the test.
    const settings = settingsFor("two_tier", { l1TtlMs: 30 });
    const warmup = requestTrace({ seed: 5, count: 1_500, keyspace: 200, startMs: 0, maxStepMs: 3 });
    const last = warmup.at(-1)?.atMs ?? 0;
    const measured = requestTrace({ seed: 6, count: 1_500, keyspace: 200, startMs: last, maxStepMs: 3 });
    const cache = counted((onEvent) =>
      twoTier.createCache({
        redis: ioredisCommands(redis),
        ttlMs: settings.cacheTtlMs,
        l1MaxSize: settings.l1MaxEntries,
        l1TtlMs: settings.l1TtlMs,
        prefix: uniquePrefix("sim"),
        onEvent,
      }),
    );
    // L1 is cleared when the subscription comes up: start only after it has.
    expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
    const real = await measuredCounters(cache, warmup, measured, settings.rows);
    await cache.close();
    expectSame(real, warmup, measured, settings);
    expect(real.tiers.l1?.hits).toBeGreaterThan(200);
    expect(real.tiers.l2?.hits).toBeGreaterThan(100);
  });
});

describe("simulate over several instances against the real strategies", () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await testRedis();
  });
  afterAll(() => {
    redis.disconnect();
  });

  function traces(seed: number, count: number) {
    const warmup = dealt(requestTrace({ seed, count, keyspace: 200, startMs: 0, maxStepMs: 3 }), 2);
    const last = warmup.at(-1)?.atMs ?? 0;
    const measured = dealt(
      requestTrace({ seed: seed + 100, count, keyspace: 200, startMs: last, maxStepMs: 3 }),
      2,
      warmup.length,
    );
    return { warmup, measured };
  }

  function expectSame(
    real: Awaited<ReturnType<typeof measuredCounters>>,
    simulated: ReturnType<typeof simulate>,
  ): void {
    expect(real.errors).toBe(0);
    expect(simulated.tiers).toEqual(real.tiers);
    expect(simulated.loads).toBe(real.loads);
    expect(simulated.dbQueries).toBe(real.dbQueries);
  }

  test("local on two instances: two caches that share nothing, writes invalidating only their own", async () => {
    const settings = settingsFor("local", { cacheTtlMs: 40 });
    const { warmup, measured } = traces(21, 3_000);
    const caches = [0, 1].map(() =>
      countedLocal((onEvent) =>
        local.createCache({ maxSize: settings.l1MaxEntries, ttlMs: settings.cacheTtlMs, onEvent }),
      ),
    );
    const real = await measuredCounters(caches, warmup, measured, settings.rows);
    for (const cache of caches) await cache.close();
    const simulated = simulate(warmup, measured, settings);
    expectSame(real, simulated);
    // The same stream on one instance finds more hits: the split is what the model must show.
    const single = simulate(
      warmup.map(({ instance: _, ...request }) => request),
      measured.map(({ instance: _, ...request }) => request),
      settings,
    );
    expect(single.hitRatio ?? 0).toBeGreaterThan((simulated.hitRatio ?? 1) + 0.02);
    expect(simulated.distinctKeys).toBeGreaterThan(simulated.globalDistinctKeys);
  });

  test("redis on two instances: one shared cache, whichever instance asks", async () => {
    const settings = settingsFor("redis");
    const { warmup, measured } = traces(23, 1_500);
    const prefix = uniquePrefix("sim2");
    const caches = [0, 1].map(() =>
      counted((onEvent) =>
        redisStrategy.createCache({
          redis: ioredisCommands(redis),
          ttlMs: settings.cacheTtlMs,
          prefix,
          onEvent,
        }),
      ),
    );
    const real = await measuredCounters(caches, warmup, measured, settings.rows);
    for (const cache of caches) await cache.close();
    expectSame(real, simulate(warmup, measured, settings));
  });

  test("two_tier on two instances: an L1 each over one L2, a write dropping every L1", async () => {
    const settings = settingsFor("two_tier", { l1TtlMs: 30 });
    const { warmup, measured } = traces(25, 1_500);
    const prefix = uniquePrefix("sim2");
    const caches = [0, 1].map(() =>
      counted((onEvent) =>
        twoTier.createCache({
          redis: ioredisCommands(redis),
          ttlMs: settings.cacheTtlMs,
          l1MaxSize: settings.l1MaxEntries,
          l1TtlMs: settings.l1TtlMs,
          prefix,
          channel: `${prefix}invalidate`,
          onEvent,
        }),
      ),
    );
    for (const cache of caches) expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
    const real = await measuredCounters(caches, warmup, measured, settings.rows);
    for (const cache of caches) await cache.close();
    expectSame(real, simulate(warmup, measured, settings));
    expect(real.tiers.l2?.hits).toBeGreaterThan(200);
  });
});

describe("simulate", () => {
  test("over two instances, a detail read on the second after the first loaded it is an L2 hit for two_tier, a miss for local", () => {
    const reads = [
      { op: "detail", id: 7, atMs: 0, instance: 0 },
      { op: "detail", id: 7, atMs: 1, instance: 1 },
      { op: "write", id: 7, atMs: 2, instance: 0 },
      { op: "detail", id: 7, atMs: 3, instance: 1 },
    ] satisfies SimRequest[];
    const twoTierResult = simulate([], reads, settingsFor("two_tier"));
    expect(twoTierResult.tiers).toEqual({ l1: { hits: 0, misses: 3 }, l2: { hits: 1, misses: 2 } });
    expect(twoTierResult.readDbQueries).toBe(2);
    // local: instance 1 loads for itself, and instance 0's write leaves its copy (stale until its TTL).
    const localResult = simulate([], reads, settingsFor("local"));
    expect(localResult.tiers).toEqual({ local: { hits: 1, misses: 2 } });
    expect(localResult.readDbQueries).toBe(2);
    expect(localResult.distinctKeys).toBe(2);
    expect(localResult.globalDistinctKeys).toBe(1);
  });

  test("simulate replays probes through the caches but counts them as no read, query or key", () => {
    const measured: SimRequest[] = [
      { op: "detail", id: 5, atMs: 0, probe: true }, // loads 5: the next read hits
      { op: "detail", id: 5, atMs: 1 },
      { op: "detail", id: 6, atMs: 2 },
      { op: "write", id: 6, atMs: 3, probe: true }, // invalidates 6: the next read misses
      { op: "detail", id: 6, atMs: 4 },
    ];
    const result = simulate([], measured, settingsFor("local"));
    expect(result).toMatchObject({ reads: 3, readDbQueries: 2, writes: 0, distinctKeys: 2, loads: 3 });
    expect(result.tiers.local).toEqual({ hits: 1, misses: 3 });
    // The optimum sees the probe's fill too: it can never fall below what the caches did.
    expect(result.optimalHitRatio).toBeCloseTo(1 / 3, 9);
    expect(result.unboundedHitRatio).toBeCloseTo(1 / 3, 9);
  });

  test("simulate counts every read of none as a DB query and a list as two loads", () => {
    const measured: SimRequest[] = [
      { op: "detail", id: 1, atMs: 0 },
      { op: "detail", id: 1, atMs: 1 },
      { op: "list", category: 2, page: 0, size: 20, atMs: 2 },
      { op: "write", id: 1, atMs: 3 },
      { op: "detail", id: 999, atMs: 4 },
    ];
    const result = simulate([], measured, settingsFor("none"));
    expect(result).toMatchObject({
      reads: 4,
      readDbQueries: 4,
      writes: 1,
      dbQueries: 5,
      loads: 5,
      distinctKeys: 3,
      hitRatio: 0,
      tiers: {},
      optimalHitRatio: null,
    });
  });

  test("simulate counts warm-up state but only measured requests", () => {
    const result = simulate(details([1, 2]), details([1, 2, 3], [2, 3, 4]), settingsFor("local"));
    expect(result.tiers).toEqual({ local: { hits: 2, misses: 1 } });
    expect(result.hitRatio).toBeCloseTo(2 / 3, 12);
  });

  test("simulate never caches an absent id and a PUT to it invalidates nothing", () => {
    const measured: SimRequest[] = [
      { op: "detail", id: 1, atMs: 0 },
      { op: "detail", id: 500, atMs: 1 },
      { op: "write", id: 500, atMs: 2 },
      { op: "detail", id: 500, atMs: 3 },
      { op: "detail", id: 1, atMs: 4 },
    ];
    const result = simulate([], measured, settingsFor("local"));
    expect(result.readDbQueries).toBe(3);
    expect(result.optimalHitRatio).toBe(0.25);
    expect(result.unboundedHitRatio).toBe(0.25);
  });

  test("simulate: a PUT drops the product and its category's pages, not other categories'", () => {
    const list = (category: number, atMs: number): SimRequest => ({
      op: "list",
      category,
      page: 0,
      size: 20,
      atMs,
    });
    const warmup: SimRequest[] = [{ op: "detail", id: 7, atMs: 0 }, list(categoryOf(7), 1), list(1, 2)];
    const measured: SimRequest[] = [
      { op: "write", id: 7, atMs: 3 },
      { op: "detail", id: 7, atMs: 4 },
      list(categoryOf(7), 5),
      list(1, 6),
    ];
    for (const strategy of ["local", "redis", "two_tier"] as const) {
      const result = simulate(warmup, measured, settingsFor(strategy));
      expect(result.readDbQueries).toBe(2);
      expect(result.optimalHitRatio).toBeCloseTo(1 / 3, 12);
      expect(result.unboundedHitRatio).toBeCloseTo(1 / 3, 12);
    }
  });

  test("simulate rejects a request the server answers with 400 and times that go back", () => {
    expect(() => simulate([], details([0]), settingsFor("local"))).toThrow(RangeError);
    expect(() =>
      simulate([], [{ op: "list", category: 1, page: 0, size: 101, atMs: 0 }], settingsFor("local")),
    ).toThrow("Cannot simulate: a list size must be an integer in 1..100: received 101");
    expect(() => simulate(details([1], [5]), details([1], [4]), settingsFor("local"))).toThrow(RangeError);
  });

  test("simulate's unbounded hit ratio on a fresh Zipf(1.1) stream agrees with FACTS §5's D(n) formula", () => {
    const keys: KeyPlan = { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 100_000, seed: 0 };
    const probabilities = rankProbabilities(keys);
    function distinct(draws: number): number {
      let sum = 0;
      for (const p of probabilities) sum += -Math.expm1(draws * Math.log1p(-p));
      return sum;
    }
    const warmupDraws = 6_000;
    const measuredDraws = 20_000;
    const expected = 1 - (distinct(warmupDraws + measuredDraws) - distinct(warmupDraws)) / measuredDraws;
    const observed: number[] = [];
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = keySampler({ ...keys, seed }, seededRandom(seed));
      const ids = Array.from({ length: warmupDraws + measuredDraws }, () => next());
      const result = simulate(
        details(ids.slice(0, warmupDraws)),
        details(
          ids.slice(warmupDraws),
          Array.from({ length: measuredDraws }, (_, i) => warmupDraws + i),
        ),
        settingsFor("none", { rows: keys.keyspace }),
      );
      observed.push(result.unboundedHitRatio as number);
    }
    // One run's new-key count has a standard deviation near 0.003 of M here; the mean of five is within 0.005.
    const mean = observed.reduce((sum, ratio) => sum + ratio, 0) / observed.length;
    expect(Math.abs(mean - expected)).toBeLessThan(0.005);
    for (const ratio of observed) expect(Math.abs(ratio - expected)).toBeLessThan(0.015);
  });
});

describe("fromTargets", () => {
  test("fromTargets parses detail, list and PUT URLs with the server's defaults", () => {
    const requests = fromTargets(
      [
        { method: "GET", url: "http://127.0.0.1:3000/products/123" },
        { method: "GET", url: "http://127.0.0.1:3000/products?category=3&page=2&size=50" },
        { method: "GET", url: "http://localhost:8080/products?category=4" },
        { method: "PUT", url: "http://127.0.0.1:3000/products/9" },
      ],
      [0, 1.5, 2, 3],
    );
    expect(requests).toEqual([
      { op: "detail", id: 123, atMs: 0 },
      { op: "list", category: 3, page: 2, size: 50, atMs: 1.5 },
      { op: "list", category: 4, page: 0, size: 20, atMs: 2 },
      { op: "write", id: 9, atMs: 3 },
    ]);
  });

  const rejected: [string, string][] = [
    ["GET", "http://127.0.0.1:3000/health"],
    ["GET", "http://127.0.0.1:3000/products/0"],
    ["GET", "http://127.0.0.1:3000/products/007"],
    ["GET", "http://127.0.0.1:3000/products/abc"],
    ["GET", "http://127.0.0.1:3000/products/1/"],
    ["GET", "http://127.0.0.1:3000/products/1?x=1"],
    ["GET", "http://127.0.0.1:3000/products?page=1"],
    ["GET", "http://127.0.0.1:3000/products?category=1&sort=name"],
    ["GET", "http://127.0.0.1:3000/products?category=1&category=2"],
    ["GET", "http://127.0.0.1:3000/products?category=1&size=0"],
    ["GET", "http://127.0.0.1:3000/products?category=1&page="],
    ["PUT", "http://127.0.0.1:3000/products?category=1"],
    ["DELETE", "http://127.0.0.1:3000/products/1"],
    ["GET", "/products/1"],
  ];
  for (const [method, url] of rejected) {
    test(`fromTargets rejects ${method} ${url}`, () => {
      expect(() => fromTargets([{ method, url }], [0])).toThrow(/^Cannot simulate: .*: received /);
    });
  }

  test("fromTargets rejects a time list of another length", () => {
    expect(() => fromTargets([{ method: "GET", url: "http://h/products/1" }], [])).toThrow(RangeError);
  });
});
