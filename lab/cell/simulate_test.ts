import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import QuickLRU from "quick-lru";
import type { CacheStrategy } from "../../strategies/_strategy.ts";
import * as local from "../../strategies/local.ts";
import * as redisStrategy from "../../strategies/redis.ts";
import * as twoTier from "../../strategies/two_tier.ts";
import type { KeyPlan } from "../plan/plan.ts";
import { keySampler, rankProbabilities, seededRandom } from "../plan/targets.ts";
import { eventually, testRedis, uniquePrefix } from "../shared/testing.ts";
import { QuickLruModel, type SimSettings, type SimStrategy } from "./cache_models.ts";
import { beladyHits } from "./optimum.ts";
import { fromTargets, type SimRequest, simulate } from "./simulate.ts";

/** A fixed wall-clock origin for setSystemTime, far from 0 so no expiry is ever exactly 0. */
const EPOCH_MS = Date.UTC(2030, 0, 1);

afterEach(() => {
  setSystemTime();
});

// ---------------------------------------------------------------------------------------------------------
// quick-lru: the model against the real package

type LruOp = { kind: "get" | "load" | "set" | "delete"; key: number; atMs: number };

interface LruTraceOptions {
  seed: number;
  ops: number;
  keyspace: number;
  skewed: boolean;
  /** Largest time step between ops; 0 keeps the clock still. */
  maxStepMs: number;
}

/** Random cache operations: mostly get-then-set-on-miss (`load`, as the strategies do), some raw sets and deletes. */
function lruTrace(options: LruTraceOptions): LruOp[] {
  const random = seededRandom(options.seed);
  const ops: LruOp[] = [];
  let atMs = EPOCH_MS;
  for (let i = 0; i < options.ops; i++) {
    atMs += Math.floor(random() * (options.maxStepMs + 1));
    const u = random();
    const key = Math.floor((options.skewed ? u ** 3 : u) * options.keyspace);
    const pick = random();
    const kind = pick < 0.7 ? "load" : pick < 0.8 ? "get" : pick < 0.9 ? "set" : "delete";
    ops.push({ kind, key, atMs });
  }
  return ops;
}

/** The minimal interface both the real quick-lru (through a clock adapter) and a model offer. */
interface LruSubject {
  get(key: number, nowMs: number): boolean;
  set(key: number, nowMs: number): void;
  delete(key: number): boolean;
}

function realQuickLru(maxSize: number, maxAgeMs?: number): LruSubject {
  const lru = new QuickLRU<number, string>({ maxSize, maxAge: maxAgeMs });
  return {
    get(key, nowMs) {
      setSystemTime(new Date(nowMs));
      return lru.get(key) !== undefined;
    },
    set(key, nowMs) {
      setSystemTime(new Date(nowMs));
      lru.set(key, `v${key}`);
    },
    delete: (key) => lru.delete(key),
  };
}

/** What a strict LRU of maxSize would do: the wrong model test 5 must catch. */
function strictLru(maxSize: number): LruSubject {
  const entries = new Map<number, true>();
  return {
    get(key) {
      if (!entries.has(key)) return false;
      entries.delete(key);
      entries.set(key, true);
      return true;
    },
    set(key) {
      entries.delete(key);
      entries.set(key, true);
      if (entries.size > maxSize) entries.delete(entries.keys().next().value as number);
    },
    delete: (key) => entries.delete(key),
  };
}

/** Per op: "h"/"m" for a lookup, "+"/"-" for delete's answer, "." for a set. */
function replayLru(subject: LruSubject, ops: LruOp[]): string {
  let out = "";
  for (const op of ops) {
    if (op.kind === "get") out += subject.get(op.key, op.atMs) ? "h" : "m";
    else if (op.kind === "load") {
      const hit = subject.get(op.key, op.atMs);
      if (!hit) subject.set(op.key, op.atMs);
      out += hit ? "h" : "m";
    } else if (op.kind === "set") {
      subject.set(op.key, op.atMs);
      out += ".";
    } else out += subject.delete(op.key) ? "+" : "-";
  }
  return out;
}

describe("QuickLruModel", () => {
  const cases: { maxSize: number; keyspace: number; maxAgeMs?: number; maxStepMs: number }[] = [
    { maxSize: 1, keyspace: 3, maxStepMs: 0 },
    { maxSize: 3, keyspace: 8, maxStepMs: 0 },
    { maxSize: 3, keyspace: 8, maxAgeMs: 7, maxStepMs: 2 },
    { maxSize: 7, keyspace: 25, maxStepMs: 0 },
    { maxSize: 7, keyspace: 25, maxAgeMs: 20, maxStepMs: 1 },
    { maxSize: 64, keyspace: 300, maxStepMs: 0 },
    { maxSize: 64, keyspace: 300, maxAgeMs: 150, maxStepMs: 1 },
  ];
  for (const c of cases) {
    for (const skewed of [false, true]) {
      const name = `maxSize ${c.maxSize}, ${skewed ? "skewed" : "uniform"} keys, ${c.maxAgeMs ? `maxAge ${c.maxAgeMs} ms` : "no maxAge"}`;
      test(`QuickLruModel answers every op as quick-lru 7.3.0 does (${name})`, () => {
        for (const seed of [1, 2, 3]) {
          const ops = lruTrace({ seed, ops: 4_000, keyspace: c.keyspace, skewed, maxStepMs: c.maxStepMs });
          const real = replayLru(realQuickLru(c.maxSize, c.maxAgeMs), ops);
          const model = replayLru(
            new QuickLruModel<number>({ maxSize: c.maxSize, maxAgeMs: c.maxAgeMs }),
            ops,
          );
          expect(model).toBe(real);
          expect(real).toContain("h"); // the trace exercises hits, not only misses
        }
      });
    }
  }

  test("QuickLruModel keeps up to 2·maxSize − 1 entries live, and a read can rotate others out", () => {
    // FACTS §12: with maxSize 3, after setting a–e all five are live. Reading a promotes it into the new
    // generation, which fills (d, e, a) and rotates: b and c, still live a moment ago, are gone.
    const keys = [1, 2, 3, 4, 5];
    for (const subject of [realQuickLru(3), new QuickLruModel<number>({ maxSize: 3 })]) {
      for (const key of keys) subject.set(key, EPOCH_MS);
      expect(keys.map((key) => subject.get(key, EPOCH_MS))).toEqual([true, false, false, true, true]);
    }
  });

  test("QuickLruModel expires an entry at exactly maxAge", () => {
    const lru = new QuickLruModel<string>({ maxSize: 10, maxAgeMs: 10 });
    lru.set("a", 100);
    expect(lru.get("a", 109)).toBe(true);
    expect(lru.get("a", 110)).toBe(false);
  });

  test("a strict LRU of maxSize answers differently from quick-lru (the exactness test can fail)", () => {
    const ops = lruTrace({ seed: 1, ops: 4_000, keyspace: 8, skewed: false, maxStepMs: 0 });
    const real = replayLru(realQuickLru(3), ops);
    const wrong = replayLru(strictLru(3), ops);
    const hits = (answers: string) => answers.split("h").length - 1;
    expect(wrong).not.toBe(real);
    expect(hits(wrong)).toBeLessThan(hits(real)); // quick-lru keeps up to 5 live, a strict LRU 3
  });
});

// ---------------------------------------------------------------------------------------------------------
// simulate() against the real strategies

function categoryOf(id: number): number {
  return 1 + (id % 5);
}

interface RequestTraceOptions {
  seed: number;
  count: number;
  /** Detail ids are drawn from 1..keyspace; ids above `rows` are absent. */
  keyspace: number;
  startMs: number;
  maxStepMs: number;
}

/** A mix like cache_toggle and write_mix: skewed details, some list pages, a few writes. */
function requestTrace(options: RequestTraceOptions): SimRequest[] {
  const random = seededRandom(options.seed);
  const requests: SimRequest[] = [];
  let atMs = options.startMs;
  for (let i = 0; i < options.count; i++) {
    atMs += Math.floor(random() * (options.maxStepMs + 1));
    const id = 1 + Math.floor(random() ** 2 * options.keyspace);
    const pick = random();
    if (pick < 0.75) requests.push({ op: "detail", id, atMs });
    else if (pick < 0.93) {
      const category = 1 + Math.floor(random() * 6); // category 6 has no products: an empty page, still cached
      const page = Math.floor(random() * 3);
      requests.push({ op: "list", category, page, size: page === 2 ? 10 : 20, atMs });
    } else requests.push({ op: "write", id, atMs });
  }
  return requests;
}

/** Sends requests through a strategy exactly as server.ts does, one at a time, with the clock at atMs. */
async function drive(
  cache: CacheStrategy,
  requests: SimRequest[],
  rows: number,
  db: { queries: number },
): Promise<void> {
  for (const request of requests) {
    setSystemTime(new Date(EPOCH_MS + request.atMs));
    if (request.op === "detail") {
      const { id } = request;
      await cache.getOrLoad(`product:${id}`, async () => {
        db.queries++;
        return id <= rows ? `{"id":${id}}` : undefined;
      });
    } else if (request.op === "list") {
      const { category, page, size } = request;
      const generation = await cache.getOrLoad(`catgen:${category}`, async () => randomUUID());
      await cache.getOrLoad(`list:${category}:${generation}:${page}:${size}`, async () => {
        db.queries++;
        return `{"category":${category},"page":${page},"size":${size},"items":[]}`;
      });
    } else {
      db.queries++;
      if (request.id <= rows) {
        await Promise.all([
          cache.delete(`product:${request.id}`),
          cache.delete(`catgen:${categoryOf(request.id)}`),
        ]);
      }
    }
  }
}

/** The strategy's measured counters: what simulate() must reproduce. */
async function measuredCounters(
  cache: CacheStrategy,
  warmup: SimRequest[],
  measured: SimRequest[],
  rows: number,
) {
  const db = { queries: 0 };
  await drive(cache, warmup, rows, db);
  const before = cache.stats();
  const queriesBefore = db.queries;
  await drive(cache, measured, rows, db);
  const after = cache.stats();
  const tiers: Record<string, { hits: number; misses: number }> = {};
  for (const [name, counts] of Object.entries(after.tiers)) {
    const start = before.tiers[name] ?? { hits: 0, misses: 0 };
    tiers[name] = { hits: counts.hits - start.hits, misses: counts.misses - start.misses };
  }
  return {
    tiers,
    loads: after.loads - before.loads,
    dbQueries: db.queries - queriesBefore,
    errors: after.errors,
  };
}

function settingsFor(strategy: SimStrategy, overrides: Partial<SimSettings> = {}): SimSettings {
  return {
    strategy,
    cacheTtlMs: 60_000,
    l1TtlMs: 60_000,
    l1MaxEntries: 16,
    rows: 150,
    categoryOf,
    ...overrides,
  };
}

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
      const cache = local.createCache({ maxSize: settings.l1MaxEntries, ttlMs: settings.cacheTtlMs });
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
    const cache = redisStrategy.createCache({
      redis,
      ttlMs: settings.cacheTtlMs,
      prefix: uniquePrefix("sim"),
    });
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
    const cache = twoTier.createCache({
      redis,
      ttlMs: settings.cacheTtlMs,
      l1MaxSize: settings.l1MaxEntries,
      l1TtlMs: settings.l1TtlMs,
      prefix: uniquePrefix("sim"),
    });
    // L1 is cleared when the subscription comes up: start only after it has.
    expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
    const real = await measuredCounters(cache, warmup, measured, settings.rows);
    await cache.close();
    expectSame(real, warmup, measured, settings);
    expect(real.tiers.l1?.hits).toBeGreaterThan(200);
    expect(real.tiers.l2?.hits).toBeGreaterThan(100);
  });
});

// ---------------------------------------------------------------------------------------------------------
// simulate(): counters and ceilings

function details(ids: number[], timesMs?: number[]): SimRequest[] {
  return ids.map((id, i) => ({ op: "detail", id, atMs: timesMs?.[i] ?? i }));
}

describe("simulate", () => {
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

describe("Belady MIN", () => {
  test("beladyHits is demand MIN: A B A at capacity 1 gives 0 hits (bypass-OPT would give 1)", () => {
    expect(beladyHits(["A", "B", "A"], { capacity: 1 })).toBe(0);
  });

  test("beladyHits evicts the key used farthest in the future (hand-worked, capacity 2)", () => {
    // A B C: evict B (next at 4) over A (next at 3); A hits; B misses, evicting A (next 6) over C (next 5) …
    expect(beladyHits(["A", "B", "C", "A", "B", "C", "A", "B", "C"], { capacity: 2 })).toBe(3);
    expect(beladyHits(["A", "B", "C", "A", "B"], { capacity: 2 })).toBe(1);
    expect(beladyHits(["A", "B", "A", "B"], { capacity: 2 })).toBe(2);
  });

  test("beladyHits never inserts a never-cached key, so it evicts nothing", () => {
    expect(beladyHits(["A", null, "A", null], { capacity: 1 })).toBe(1);
  });

  test("beladyHits counts an access at or after a copy's expiry as a miss", () => {
    expect(beladyHits(["A", "A", "A"], { capacity: 1, timesMs: [0, 9, 10], ttlMs: 10 })).toBe(1);
  });

  test("beladyHits with a TTL is Belady's rule, not an optimum: a trace where another schedule hits more", () => {
    // MIN evicts B at t=2 (A is used sooner) and gets 1 hit (A@3). Evicting A instead reloads it at t=3, whose
    // fresher copy still serves A@12, and B@4 hits: 2 hits.
    const trace = ["A", "B", "C", "A", "B", "A"];
    expect(beladyHits(trace, { capacity: 2, timesMs: [0, 1, 2, 3, 4, 12], ttlMs: 10 })).toBe(1);
  });

  test("simulate's optimum for local is MIN at 2·maxSize − 1, above the quick-lru model's hit ratio", () => {
    // maxSize 1: capacity 1, so optimal = demand MIN's 0 hits on A B A.
    expect(simulate([], details([1, 2, 1]), settingsFor("local", { l1MaxEntries: 1 })).optimalHitRatio).toBe(
      0,
    );
    // maxSize 2: capacity 3; A B C A B C cycles through 3 keys and every second pass hits.
    const cycle = simulate([], details([1, 2, 3, 1, 2, 3]), settingsFor("local", { l1MaxEntries: 2 }));
    expect(cycle.optimalHitRatio).toBe(0.5);
  });

  test("simulate's optimum counts a TTL expiry as a miss, at quick-lru's and at Redis' boundary", () => {
    const at = (ms: number) =>
      simulate([], details([1, 1], [0, ms]), settingsFor("local", { cacheTtlMs: 10 }));
    expect(at(9).optimalHitRatio).toBe(0.5);
    expect(at(10).optimalHitRatio).toBe(0);
    expect(at(10).hitRatio).toBe(0);
    const redisAt = (ms: number) =>
      simulate([], details([1, 1], [0, ms]), settingsFor("redis", { cacheTtlMs: 10 }));
    expect(redisAt(10).optimalHitRatio).toBe(0.5);
    expect(redisAt(10).hitRatio).toBe(0.5);
    expect(redisAt(11).optimalHitRatio).toBe(0);
  });

  test("simulate's optimum for two_tier counts L1 serving a copy after L2 expired it", () => {
    // Loaded at 0 (L1 until 10, L2 through 10); at 10 L1 has expired, L2 backfills L1 until 20; at 15 L1 hits.
    const settings = settingsFor("two_tier", { cacheTtlMs: 10, l1TtlMs: 10 });
    const result = simulate([], details([1, 1, 1], [0, 10, 15]), settings);
    expect(result.tiers).toEqual({ l1: { hits: 1, misses: 2 }, l2: { hits: 1, misses: 1 } });
    expect(result.hitRatio).toBeCloseTo(2 / 3, 12);
    expect(result.optimalHitRatio).toBeCloseTo(2 / 3, 12);
  });

  const randomCases: { strategy: SimStrategy; overrides: Partial<SimSettings> }[] = [
    { strategy: "local", overrides: { l1MaxEntries: 4 } },
    { strategy: "local", overrides: { l1MaxEntries: 16 } },
    { strategy: "local", overrides: { l1MaxEntries: 64 } },
    { strategy: "redis", overrides: { cacheTtlMs: 50 } },
    { strategy: "two_tier", overrides: { cacheTtlMs: 50, l1TtlMs: 20, l1MaxEntries: 8 } },
    { strategy: "two_tier", overrides: { cacheTtlMs: 20, l1TtlMs: 50, l1MaxEntries: 32 } },
  ];
  for (const { strategy, overrides } of randomCases) {
    test(`simulate's hit ratio ≤ optimal ≤ unbounded on random traces (${strategy} ${JSON.stringify(overrides)})`, () => {
      for (const seed of [1, 2, 3, 4]) {
        const warmup = requestTrace({ seed, count: 2_000, keyspace: 300, startMs: 0, maxStepMs: 2 });
        const last = warmup.at(-1)?.atMs ?? 0;
        const measured = requestTrace({
          seed: seed + 50,
          count: 4_000,
          keyspace: 300,
          startMs: last,
          maxStepMs: 2,
        });
        const result = simulate(warmup, measured, settingsFor(strategy, { rows: 250, ...overrides }));
        const hit = result.hitRatio as number;
        const optimal = result.optimalHitRatio as number;
        expect(hit).toBeGreaterThan(0.02);
        expect(optimal).toBeGreaterThanOrEqual(hit);
        expect(result.unboundedHitRatio as number).toBeGreaterThanOrEqual(optimal);
      }
    });
  }
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
