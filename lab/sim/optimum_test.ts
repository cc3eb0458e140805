import { describe, expect, test } from "bun:test";
import type { SimSettings, SimStrategy } from "./cache_models.ts";
import { beladyHits } from "./optimum.ts";
import { details, requestTrace, settingsFor } from "./sim_testing.ts";
import { simulate } from "./simulate.ts";

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
