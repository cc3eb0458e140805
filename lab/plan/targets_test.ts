import { describe, expect, test } from "bun:test";
import type { AttackPlan, KeyPlan } from "./attack_plan.ts";
import {
  checkKeyPlan,
  drawsPerTarget,
  generateTargets,
  keySampler,
  rankProbabilities,
  rankToId,
  seededRandom,
  TargetStream,
} from "./targets.ts";

function plan(overrides: Partial<AttackPlan> = {}): AttackPlan {
  return {
    name: "t",
    baseUrl: "http://127.0.0.1:3000/",
    model: { kind: "open", rateRps: 100 },
    durationS: 1,
    warmupS: 0,
    timeoutS: 2,
    headers: {},
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "uniform" }, keyspace: 1_000, seed: 42 },
    targetCount: 10_000,
    maxConnections: 64,
    ...overrides,
  };
}

/** Frequency of each rank (0-based) in `n` draws. */
function rankFrequencies(keys: KeyPlan, n: number): Float64Array {
  const idToRank = new Map<number, number>();
  rankToId(keys.keyspace, keys.seed).forEach((id, rank) => {
    idToRank.set(id, rank);
  });
  const next = keySampler(keys, seededRandom(keys.seed));
  const counts = new Float64Array(keys.keyspace);
  for (let i = 0; i < n; i++) {
    const rank = idToRank.get(next()) as number;
    counts[rank] = (counts[rank] as number) + 1 / n;
  }
  return counts;
}

function totalVariation(a: Float64Array, b: Float64Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs((a[i] as number) - (b[i] as number));
  return sum / 2;
}

describe("keySampler", () => {
  test("zipf draws follow 1/k^s (total variation < 0.02 over 200k draws)", () => {
    const keys: KeyPlan = { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 1_000, seed: 7 };
    const expected = rankProbabilities(keys);
    const observed = rankFrequencies(keys, 200_000);
    expect(totalVariation(observed, expected)).toBeLessThan(0.02);
    expect(observed[0] as number).toBeCloseTo(expected[0] as number, 2);
  });

  test("hotspot sends hotShare of the draws to hotFraction of the keys", () => {
    const keys: KeyPlan = {
      distribution: { kind: "hotspot", hotFraction: 0.1, hotShare: 0.9 },
      keyspace: 1_000,
      seed: 3,
    };
    const observed = rankFrequencies(keys, 100_000);
    const hot = observed.slice(0, 100).reduce((a, b) => a + b, 0);
    expect(hot).toBeGreaterThan(0.89);
    expect(hot).toBeLessThan(0.91);
  });

  test("uniform draws cover the keyspace evenly", () => {
    const keys: KeyPlan = { distribution: { kind: "uniform" }, keyspace: 100, seed: 1 };
    const observed = rankFrequencies(keys, 100_000);
    expect(totalVariation(observed, rankProbabilities(keys))).toBeLessThan(0.03);
  });

  test("sequential visits every key once before any twice", () => {
    const next = keySampler({ distribution: { kind: "sequential" }, keyspace: 5, seed: 1 }, seededRandom(1));
    expect(Array.from({ length: 12 }, next)).toEqual([1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2]);
  });

  test("checkKeyPlan rejects impossible parameters", () => {
    expect(() =>
      checkKeyPlan({ distribution: { kind: "zipf", exponent: 0 }, keyspace: 10, seed: 1 }),
    ).toThrow("zipf exponent must be > 0");
    expect(() =>
      checkKeyPlan({
        distribution: { kind: "hotspot", hotFraction: 1.5, hotShare: 0.9 },
        keyspace: 10,
        seed: 1,
      }),
    ).toThrow("hotspot");
    expect(() => checkKeyPlan({ distribution: { kind: "uniform" }, keyspace: 0, seed: 1 })).toThrow(
      "keyspace",
    );
  });
});

describe("generateTargets", () => {
  test("generateTargets gives the same targets for the same plan and others for another seed", () => {
    const zipf = plan({ keys: { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 1_000, seed: 42 } });
    expect(generateTargets(zipf)).toEqual(generateTargets(zipf));
    expect(generateTargets({ ...zipf, keys: { ...zipf.keys, seed: 43 } })).not.toEqual(generateTargets(zipf));
  });

  test("generateTargets mixes templates by weight and fills ids, vars and bodies", () => {
    const targets = generateTargets(
      plan({
        requests: [
          { name: "detail", weight: 80, method: "GET", path: "/products/{id}" },
          {
            name: "list",
            weight: 10,
            method: "GET",
            path: "/products?category={category}&page={page}&size=20",
            vars: { category: { min: 1, max: 50 }, page: { min: 0, max: 4 } },
          },
          {
            name: "update",
            weight: 10,
            method: "PUT",
            path: "/products/{id}",
            body: '{"stock":{stock}}',
            vars: { stock: { min: 0, max: 9 } },
          },
        ],
      }),
    );
    const share = (name: string) => targets.filter((t) => t.template === name).length / targets.length;
    expect(share("detail")).toBeCloseTo(0.8, 1);
    expect(share("list")).toBeCloseTo(0.1, 1);
    expect(share("update")).toBeCloseTo(0.1, 1);
    for (const target of targets) {
      expect(target.url.startsWith("http://127.0.0.1:3000/products")).toBe(true);
      if (target.template === "list") {
        const url = new URL(target.url);
        expect(Number(url.searchParams.get("category"))).toBeWithin(1, 51);
        expect(Number(url.searchParams.get("page"))).toBeWithin(0, 5);
        expect(target.key).toBeNull();
      } else {
        expect(target.url).toBe(`http://127.0.0.1:3000/products/${target.key}`);
        expect(target.key).toBeWithin(1, 1_001);
      }
      if (target.template === "update") {
        expect(target.method).toBe("PUT");
        expect(JSON.parse(target.body as string).stock).toBeWithin(0, 10);
      } else {
        expect(target.body).toBeNull();
      }
    }
  });

  test("generateTargets refuses a placeholder it has no value for", () => {
    expect(() =>
      generateTargets(plan({ requests: [{ name: "x", weight: 1, method: "GET", path: "/p/{sku}" }] })),
    ).toThrow("no value for {sku}");
  });
});

describe("several instances", () => {
  const urls = ["http://127.0.0.1:3000", "http://127.0.0.1:3001", "http://127.0.0.1:3002"];

  test("stream positions are dealt round-robin, across takes, over the same keys as one instance", () => {
    const one = generateTargets(plan({ baseUrl: urls[0] }), 30);
    const stream = new TargetStream(plan({ baseUrl: urls[0], instanceUrls: urls }));
    const three = [...stream.take(7), ...stream.take(23)];
    expect(three.map((target) => target.key)).toEqual(one.map((target) => target.key));
    three.forEach((target, position) => {
      expect(target.instance).toBe(position % 3);
      expect(target.url).toBe(`${urls[position % 3]}/products/${target.key}`);
    });
    expect(one.every((target) => target.instance === 0)).toBe(true);
  });

  test("instanceUrls must start with baseUrl", () => {
    expect(() => new TargetStream(plan({ baseUrl: urls[1], instanceUrls: urls }))).toThrow(
      "instanceUrls must start with baseUrl",
    );
  });

  test("TargetStream.at(p) is position p of take() for every distribution, with variables and instances", () => {
    const mixes: Partial<AttackPlan>[] = [
      { keys: { distribution: { kind: "uniform" }, keyspace: 1_000, seed: 3 } },
      { keys: { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 1_000, seed: 3 } },
      {
        keys: {
          distribution: { kind: "hotspot", hotFraction: 0.1, hotShare: 0.9 },
          keyspace: 1_000,
          seed: 3,
        },
      },
      { keys: { distribution: { kind: "sequential" }, keyspace: 97, seed: 3 } },
      {
        instanceUrls: ["http://127.0.0.1:3000/", "http://127.0.0.1:3001"],
        requests: [
          {
            name: "a",
            weight: 3,
            method: "GET",
            path: "/products/{id}?page={page}",
            vars: { page: { min: 1, max: 9 } },
          },
          {
            name: "b",
            weight: 1,
            method: "PUT",
            path: "/products/{id}",
            body: '{"n":{n}}',
            vars: { n: { min: 0, max: 5 } },
          },
        ],
      },
      { requests: [{ name: "health", weight: 1, method: "GET", path: "/health" }] },
    ];
    for (const overrides of mixes) {
      const p = plan(overrides);
      const walked = generateTargets(p, 3_000);
      const stream = new TargetStream(p);
      // Out of order and repeated, as k6's VUs ask.
      for (const position of [2_999, 0, 1, 1_234, 1_233, 0, 2_000]) {
        expect(stream.at(position)).toEqual(walked[position] as (typeof walked)[number]);
      }
      expect(stream.take(2)).toEqual(walked.slice(2_001, 2_003));
    }
  });

  test("a mix whose templates differ in {id} or variables cannot seek, and says why", () => {
    const mixed = plan({
      requests: [
        { name: "detail", weight: 1, method: "GET", path: "/products/{id}" },
        { name: "health", weight: 1, method: "GET", path: "/health" },
      ],
    });
    expect(drawsPerTarget(mixed)).toBeNull();
    expect(() => new TargetStream(mixed).seek(5)).toThrow("differ in {id} or in their variables");
    expect(() => new TargetStream(plan()).seek(-1)).toThrow("non-negative integer");
    expect(drawsPerTarget(plan())).toBe(2);
  });
});
