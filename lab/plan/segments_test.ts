import { describe, expect, test } from "bun:test";
import type { AttackPlan } from "./attack_plan.ts";
import {
  CLOSED_RATE_BOUND_RPS,
  expectedDistinctKeys,
  expectedSampledReuse,
  listSize,
  MAX_LIST_TARGETS,
  requestsBound,
  reusedPositions,
  SAMPLED_REUSE_TOLERANCE,
  sampledListSize,
  sentPositions,
} from "./segments.ts";
import { keySampler, seededRandom, TargetStream } from "./targets.ts";

function plan(overrides: Partial<AttackPlan> = {}): AttackPlan {
  return {
    name: "t",
    baseUrl: "http://127.0.0.1:3000",
    model: { kind: "open", rateRps: 2_000 },
    durationS: 10,
    warmupS: 3,
    timeoutS: 5,
    headers: {},
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 100_000, seed: 42 },
    targetCount: 1_000,
    maxConnections: 64,
    ...overrides,
  };
}

/** FACTS §5: D(n) = Σ_k 1 − (1 − p_k)^n, from the plan's own rank probabilities. */
function freshHitRatio(p: AttackPlan, warmup: number, measured: number): number {
  const d = (n: number) => expectedDistinctKeys(p, n).mean;
  return 1 - (d(warmup + measured) - d(warmup)) / measured;
}

describe("target stream", () => {
  test("TargetStream hands out consecutive segments that equal one long draw", () => {
    const stream = new TargetStream(plan());
    const warmup = stream.take(600);
    const measured = stream.take(2_000);
    expect(stream.position).toBe(2_600);
    expect([...warmup, ...measured]).toEqual(new TargetStream(plan()).take(2_600));
  });

  test("requestsBound integrates open and ramping rates and bounds a closed model", () => {
    expect(requestsBound(plan(), 10)).toBe(20_000);
    const ramping = plan({
      model: { kind: "ramping", startRps: 0, stages: [{ targetRps: 100, durationS: 10 }] },
      durationS: 10,
    });
    expect(requestsBound(ramping, 10)).toBe(500);
    expect(requestsBound(ramping, 2)).toBe(200); // the warm-up holds the first stage's target
    const closed = plan({ model: { kind: "closed", connections: 8 } });
    expect(requestsBound(closed, 5)).toBe(5 * CLOSED_RATE_BOUND_RPS);
    expect(requestsBound(closed, 20, 30_000)).toBe(600_000);
  });

  test("a sampled list is the shortest whose expected re-sent share is within the tolerance", () => {
    const size = sampledListSize(20_000) as number;
    expect(expectedSampledReuse(size, 20_000)).toBeLessThanOrEqual(SAMPLED_REUSE_TOLERANCE);
    expect(expectedSampledReuse(size - 1, 20_000)).toBeGreaterThan(SAMPLED_REUSE_TOLERANCE);
    // A list as long as the run re-sends about 1/e of it: what oha did with the old 100 000-line list.
    expect(expectedSampledReuse(100_000, 100_000)).toBeCloseTo(1 / Math.E, 3);
    expect(sampledListSize(400_000)).toBeNull(); // saturation's 40 000 rps × 10 s
    const fast = plan({ model: { kind: "open", rateRps: 40_000 } });
    expect(listSize("sampled", fast, 10)).toBe(
      `it draws each request's URL uniformly with replacement from its file: even ${MAX_LIST_TARGETS} lines ` +
        "would re-send 6.4% of the 400000 requests a 10 s run can send, over the 1.0% the attack allows",
    );
    // An attack that declares more gets the longest list, and its rows say what it re-sent.
    expect(listSize("sampled", { ...fast, allowedReuseRatio: 0.1 }, 10)).toBe(MAX_LIST_TARGETS);
    expect(listSize("prefix", { ...fast, allowedReuseRatio: 0.1 }, 10)).toBe(400_000 + 4_000 + 16);
    expect(listSize("prefix", plan(), 10)).toBe(20_000 + 200 + 16);
  });

  test("reusedPositions counts re-sent positions of a prefix, of stripes and of a sampler", () => {
    expect(reusedPositions({ kind: "prefix", count: 100 }, 100)).toBe(0);
    expect(reusedPositions({ kind: "prefix", count: 130 }, 100)).toBe(30);
    // 10 targets in 3 stripes: lengths 4, 3, 3.
    expect(reusedPositions({ kind: "stripes", counts: [4, 3, 3] }, 10)).toBe(0);
    expect(reusedPositions({ kind: "stripes", counts: [5, 3, 7] }, 10)).toBe(1 + 4);
    expect(reusedPositions({ kind: "sampled", count: 1_000 }, 1_000)).toBeCloseTo(367.7, 1);
  });

  test("sentPositions lists what was sent: a prefix, interleaved stripes, wrapping within each", () => {
    expect([...sentPositions({ kind: "prefix", count: 5 }, 3)]).toEqual([0, 1, 2, 0, 1]);
    // Stripes of 5 targets: 0, 2, 4 and 1, 3; the first stripe wraps on its fourth request.
    expect([...sentPositions({ kind: "stripes", counts: [4, 1] }, 5)]).toEqual([0, 1, 2, 4, 0]);
    const sampled = sentPositions({ kind: "sampled", count: 1_000 }, 50, 9);
    expect(sampled).toHaveLength(1_000);
    expect(Math.max(...sampled)).toBeLessThan(50);
  });
});

describe("expected distinct keys", () => {
  test("the exact formula gives the issue's fresh-stream hit ratios for quickstart and read_heavy", () => {
    // quickstart: 3 s + 10 s at 2 000 rps; read_heavy: 10 s + 30 s at 3 000 rps (issue 8's table).
    expect(freshHitRatio(plan(), 6_000, 20_000)).toBeCloseTo(0.781, 3);
    expect(freshHitRatio(plan(), 30_000, 90_000)).toBeCloseTo(0.865, 3);
  });

  test("the formula matches a Monte Carlo count of a fresh Zipf draw within its tolerance", () => {
    const p = plan();
    const next = keySampler(p.keys, seededRandom(3));
    const seen = new Set<number>();
    for (let i = 0; i < 20_000; i++) seen.add(next());
    const expected = expectedDistinctKeys(p, 20_000);
    expect(Math.abs(seen.size - expected.mean)).toBeLessThan(4 * expected.sd);
  });

  test("list templates count every (category, page) URL, PUTs none, sequential passes exactly", () => {
    const mix = plan({
      keys: { distribution: { kind: "uniform" }, keyspace: 100, seed: 1 },
      requests: [
        {
          name: "list",
          weight: 1,
          method: "GET",
          path: "/products?category={c}&page={p}",
          vars: { c: { min: 1, max: 5 }, p: { min: 0, max: 1 } },
        },
        { name: "put", weight: 1, method: "PUT", path: "/products/{id}", body: "{}" },
      ],
    });
    // Many requests: every one of the 10 list URLs is seen, and nothing else.
    expect(expectedDistinctKeys(mix, 10_000).mean).toBeCloseTo(10, 6);
    const sequential = plan({ keys: { distribution: { kind: "sequential" }, keyspace: 500, seed: 1 } });
    expect(expectedDistinctKeys(sequential, 400)).toEqual({ mean: 400, sd: 0 });
    expect(expectedDistinctKeys(sequential, 900)).toEqual({ mean: 500, sd: 0 });
  });
});

describe("distinct keys over several instances", () => {
  test("each instance counts its own: N independent draws of n/N requests", () => {
    const urls = ["http://127.0.0.1:3000", "http://127.0.0.1:3001"];
    const single = plan({ keys: { distribution: { kind: "uniform" }, keyspace: 300, seed: 1 } });
    const dealt = { ...single, instanceUrls: urls };
    const one = expectedDistinctKeys(single, 600);
    const two = expectedDistinctKeys(dealt, 600);
    // Uniform over 300 keys: D(n) = 300 (1 − (1 − 1/300)^n).
    const d = (n: number) => 300 * (1 - (1 - 1 / 300) ** n);
    expect(one.mean).toBeCloseTo(d(600), 6);
    expect(two.mean).toBeCloseTo(2 * d(300), 6);
    expect(two.sd).toBeCloseTo(Math.SQRT2 * expectedDistinctKeys(single, 300).sd, 6);
    // An odd count: 301 and 300.
    expect(expectedDistinctKeys(dealt, 601).mean).toBeCloseTo(d(301) + d(300), 6);
  });

  test("sequential keys dealt over N instances: each walks every N-th key of the cycle", () => {
    const sequential = plan({
      keys: { distribution: { kind: "sequential" }, keyspace: 10, seed: 1 },
      instanceUrls: ["http://127.0.0.1:3000", "http://127.0.0.1:3001", "http://127.0.0.1:3002"],
    });
    // gcd(3, 10) = 1: each instance's cycle is all 10 keys; 45 requests give 15 each, 10 distinct each.
    expect(expectedDistinctKeys(sequential, 45)).toEqual({ mean: 30, sd: 0 });
    const even = { ...sequential, instanceUrls: ["http://127.0.0.1:3000", "http://127.0.0.1:3001"] };
    // gcd(2, 10) = 2: instance 0 sees the odd keys only, instance 1 the even ones.
    expect(expectedDistinctKeys(even, 40)).toEqual({ mean: 10, sd: 0 });
    // Check against the stream itself.
    const targets = new TargetStream(even).take(40);
    const perInstance = [0, 1].map(
      (i) => new Set(targets.filter((t) => t.instance === i).map((t) => t.key)).size,
    );
    expect((perInstance[0] ?? 0) + (perInstance[1] ?? 0)).toBe(10);
  });
});
