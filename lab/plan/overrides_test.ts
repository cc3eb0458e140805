import { describe, expect, test } from "bun:test";
import {
  cells,
  type Experiment,
  type ExperimentAttack,
  proxiedServices,
  serverSettings,
} from "./experiment_plan.ts";
import { addedOverBase, applyOverrides, withAddedOverBase } from "./overrides.ts";

function attack(name: string, overrides: Partial<ExperimentAttack> = {}): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps: 100 },
    durationS: 5,
    warmupS: 2,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "uniform" }, seed: 1 },
    ...overrides,
  };
}

function experiment(attacks: ExperimentAttack[], overrides: Partial<Experiment> = {}): Experiment {
  return {
    question: "q",
    expect: "e",
    strategies: ["none", "redis"],
    repeats: 2,
    seed: { rows: 1_000, seed: 1, descriptionBytes: 64 },
    server: { pgPoolMax: 3, cacheTtlMs: 9_000 },
    attacks,
    ...overrides,
  };
}

/** Each cell as `repeat strategy attack+attack`. */
function order(exp: Experiment): string[] {
  return cells(exp).map(
    (cell) => `${cell.repeat} ${cell.strategy} ${cell.attacks.map((a) => a.name).join("+")}`,
  );
}

describe("applyOverrides", () => {
  test("server flags win over the experiment's settings and every attack's own", () => {
    const own = attack("own", { server: { pgPoolMax: 2, cacheTtlMs: 1_000, earlyRefreshBeta: 50 } });
    const exp = applyOverrides(experiment([attack("plain"), own]), {
      settings: {
        pgPoolMax: 20,
        cacheTtlMs: 4_000,
        l1TtlMs: 500,
        l1MaxEntries: 77,
        instances: 2,
        cpuLimit: 0.5,
      },
    });
    for (const each of exp.attacks) {
      expect(serverSettings(exp, each)).toMatchObject({
        pgPoolMax: 20,
        cacheTtlMs: 4_000,
        l1TtlMs: 500,
        l1MaxEntries: 77,
        instances: 2,
        cpuLimit: 0.5,
      });
    }
    // What the flags do not name stays the attack's own.
    expect(serverSettings(exp, exp.attacks[1]).earlyRefreshBeta).toBe(50);
  });

  test("--warmup-s replaces every attack's warm-up; --payload-bytes sizes every seed plan, shared ones still shared", () => {
    const sharedSeed = { rows: 500, seed: 3, descriptionBytes: 10 };
    const exp = applyOverrides(
      experiment([attack("a", { seed: sharedSeed }), attack("b", { seed: sharedSeed }), attack("c")]),
      { warmupS: 0, payloadBytes: 2_000 },
    );
    expect(exp.attacks.map((a) => a.warmupS)).toEqual([0, 0, 0]);
    expect(exp.seed.payloadBytes).toEqual({ kind: "fixed", bytes: 2_000 });
    expect(exp.attacks[0]?.seed).toEqual({ ...sharedSeed, payloadBytes: { kind: "fixed", bytes: 2_000 } });
    expect(exp.attacks[0]?.seed).toBe(exp.attacks[1]?.seed as NonNullable<ExperimentAttack["seed"]>);
  });

  test("a miss cost and a Redis round trip asked are what the proxy adds less the lab's own, over the declared distance", () => {
    const far = attack("far", {
      network: { postgres: { latencyMs: 0.25, jitterMs: 0.1 }, redis: { latencyMs: 1, bandwidthKBps: 500 } },
    });
    const exp = applyOverrides(experiment([attack("direct"), far]), {
      missCostMs: 5,
      redisRttMs: 0.5,
      noBase: true,
    });
    // Before the base is measured: through the proxy, as declared, nothing added yet.
    const [direct, farther] = exp.attacks;
    expect(direct?.network).toEqual({ postgres: { latencyMs: 0 }, redis: { latencyMs: 0 } });
    expect(proxiedServices([direct as ExperimentAttack])).toEqual(["postgres", "redis"]);
    // Over the lab's own miss cost, 0.42 ms, and Redis round trip, 0.1 ms.
    const added = addedOverBase({ postgres: 5, redis: 0.5 }, { missCostMs: 0.42, redisRttMs: 0.1 });
    expect(added).toEqual({ postgres: 4.58, redis: 0.4 });
    if (typeof added === "string") throw new Error(added);
    expect(withAddedOverBase(direct as ExperimentAttack, added).network).toEqual({
      postgres: { latencyMs: 2.29 },
      redis: { latencyMs: 0.2 },
    });
    expect(withAddedOverBase(farther as ExperimentAttack, added).network).toEqual({
      postgres: { latencyMs: 2.54, jitterMs: 0.1 },
      redis: { latencyMs: 1.2, bandwidthKBps: 500 },
    });
    // The experiment file's own attack is left as it was.
    expect(far.network?.postgres?.latencyMs).toBe(0.25);
  });

  test("a figure below the lab's own is refused in one line naming the base; at the base, nothing is added", () => {
    expect(addedOverBase({ postgres: 0.1 }, { missCostMs: 0.42, redisRttMs: null })).toBe(
      "Cannot use --miss-cost-ms 0.1: below this machine's own miss cost, 0.42 ms (measured just now through the lab's path to Postgres): give at least 0.42",
    );
    expect(addedOverBase({ redis: 0 }, { missCostMs: null, redisRttMs: 0.093 })).toBe(
      "Cannot use --redis-rtt-ms 0: below this machine's own Redis round trip, 0.093 ms (measured just now through the lab's path to Redis): give at least 0.093",
    );
    expect(addedOverBase({ postgres: 0.42 }, { missCostMs: 0.42, redisRttMs: null })).toEqual({
      postgres: 0,
    });
    // Half a µs below rounds to the µs the toxic takes: not below.
    expect(addedOverBase({ postgres: 0.4199 }, { missCostMs: 0.42, redisRttMs: null })).toEqual({
      postgres: 0,
    });
    expect(addedOverBase({ redis: 1 }, { missCostMs: 0.4, redisRttMs: null })).toBe(
      "Cannot use --redis-rtt-ms 1: the lab could not measure its own Redis round trip through its path to Redis",
    );
    // Nothing asked: nothing added, whatever the base.
    expect(addedOverBase({}, { missCostMs: 0.4, redisRttMs: 0.1 })).toEqual({});
  });

  test("0 ms asked still twins and proxies: the run refuses it once it knows its own base", () => {
    const exp = applyOverrides(experiment([attack("a")]), { missCostMs: 0, redisRttMs: 0 });
    expect(exp.attacks.map((a) => a.name)).toEqual(["a_base", "a"]);
    expect(proxiedServices(exp.attacks)).toEqual(["postgres", "redis"]);
    expect(applyOverrides(experiment([attack("a")]), {}).attacks.map((a) => a.name)).toEqual(["a"]);
  });

  test("each attack gets a base twin right before it: every strategy's base cell first in each repeat", () => {
    const far = attack("far", { network: { postgres: { latencyMs: 1 } } });
    const exp = applyOverrides(experiment([attack("near"), far]), { missCostMs: 4 });
    // Over a base of 0.5 ms: 3.5 ms added to each attack's round trip, nothing to its twin's.
    const resolved = exp.attacks.map((a) => withAddedOverBase(a, { postgres: 3.5 }));
    expect(resolved.map((a) => [a.name, a.baseOf, a.network?.postgres?.latencyMs])).toEqual([
      ["near_base", "near", 0],
      ["near", undefined, 1.75],
      ["far_base", "far", 1],
      ["far", undefined, 2.75],
    ]);
    // The base goes through the same proxy (at 0 ms): the proxy's own cost is in both.
    expect(proxiedServices([exp.attacks[0] as ExperimentAttack])).toEqual(["postgres"]);
    expect(order(exp)).toEqual([
      "1 none near_base",
      "1 redis near_base",
      "1 none near",
      "1 redis near",
      "1 none far_base",
      "1 redis far_base",
      "1 none far",
      "1 redis far",
      // The strategies' order turns each repeat; every base cell still comes before its attack's.
      "2 redis near_base",
      "2 none near_base",
      "2 redis near",
      "2 none near",
      "2 redis far_base",
      "2 none far_base",
      "2 redis far",
      "2 none far",
    ]);
  });

  test("a base twin of a Redis round trip proxies Redis alone; --no-base drops the twins", () => {
    const exp = applyOverrides(experiment([attack("a")]), { redisRttMs: 2 });
    expect(exp.attacks.map((a) => [a.name, withAddedOverBase(a, { redis: 1.9 }).network])).toEqual([
      ["a_base", { redis: { latencyMs: 0 } }],
      ["a", { redis: { latencyMs: 0.95 } }],
    ]);
    const none = applyOverrides(experiment([attack("a")]), { redisRttMs: 2, noBase: true });
    expect(none.attacks.map((a) => a.name)).toEqual(["a"]);
  });

  test("a sequence is twinned whole: one server runs the bases, then another the attacks", () => {
    const exp = applyOverrides(
      experiment([attack("pass1"), attack("pass2")], { sequence: true, strategies: ["local"], repeats: 1 }),
      { missCostMs: 2 },
    );
    expect(order(exp)).toEqual(["1 local pass1_base+pass2_base", "1 local pass1+pass2"]);
  });

  test("a twin whose name is taken is refused", () => {
    expect(() => applyOverrides(experiment([attack("a"), attack("a_base")]), { missCostMs: 1 })).toThrow(
      "already has an attack named a_base",
    );
  });
});
