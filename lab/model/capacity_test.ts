import { describe, expect, test } from "bun:test";
import { capacityOf, outcomeCpu } from "./capacity.ts";
import { baseRows, withHists } from "./model_testing.ts";
import { predictStrategy, type Target } from "./predict.ts";
import { waitOf, waitQuantileMs } from "./queueing.ts";
import { allCosts, type StrategyCosts } from "./tier_costs.ts";

// CPU seconds over 10 000 requests: none 1.5 server + 1.0 Postgres; local 0.5 + 0.2; redis 0.9 + 0.2 + 0.14.
const CPU: Record<string, [number, number, number]> = {
  none: [1.5, 1.0, 0],
  local: [0.5, 0.2, 0],
  redis: [0.9, 0.2, 0.14],
  two_tier: [0.6, 0.2, 0.06],
};
const rows = baseRows().map((row) => withHists({ ...row, pg_pool_max: 10 }, CPU[String(row.strategy)]));
const all = allCosts(rows).costs;
const of = (s: string) => all.find((c) => c.strategy === s) as StrategyCosts;
const target: Target = {
  missCostMs: 0,
  redisRttMs: 0,
  hitRatio: 0.71,
  l1HitRatio: 0.71,
  writeRatio: 0,
  listShare: 0,
};
const inputs = { target, cores: 2, pgPoolMax: 4, p99TargetMs: 100 };

describe("CPU by outcome", () => {
  test("a miss is none's request; an in-process hit what local's hits cost beyond its misses", () => {
    const cpu = outcomeCpu(of("local"), all);
    if (typeof cpu === "string") throw new Error(cpu);
    // none: 150 µs server + 100 µs Postgres a request. local at 0.8 hits: (50 − 0.2 × 150) / 0.8 = 25 µs.
    expect(cpu.perOutcome.miss.server).toBeCloseTo(150e-6, 12);
    expect(cpu.perOutcome.miss.postgres).toBeCloseTo(100e-6, 12);
    expect(cpu.perOutcome.l1_hit.server).toBeCloseTo(25e-6, 12);
  });

  test("a Redis command's CPU is what the strategy's cells cost beyond its hits and misses", () => {
    const cpu = outcomeCpu(of("redis"), all);
    if (typeof cpu === "string") throw new Error(cpu);
    // 1.4 commands a request (0.8 hits × 1 + 0.2 misses × 3); server beyond: 90 − (0.8 × 25 + 0.2 × 150) = 40 µs.
    const command = 40e-6 / 1.4;
    expect(cpu.perOutcome.l2_hit.server).toBeCloseTo(25e-6 + command, 12);
    expect(cpu.perOutcome.miss.server).toBeCloseTo(150e-6 + 3 * command, 12);
    expect(cpu.perOutcome.l2_hit.redis).toBeCloseTo(14e-6 / 1.4, 12);
  });

  test("without none in the base run there is no CPU bound, and it says so", () => {
    const withoutNone = all.filter((c) => c.strategy !== "none");
    expect(outcomeCpu(of("local"), withoutNone)).toContain("no CPU figures for none");
    const capacity = capacityOf(of("local"), withoutNone, inputs);
    expect(capacity.bounds.cpu).toBeNull();
    expect(capacity.notes[0]).toContain("no CPU bound");
  });
});

describe("capacity", () => {
  test("a 10 ms miss and a pool of 4: none is pool-bound under 4 ÷ 10 ms, local about none ÷ (1 − h)", () => {
    const slow = { ...inputs, target: { ...target, missCostMs: 9.3 } }; // 0.7 ms loads + 9.3 = 10 ms held
    const none = capacityOf(of("none"), all, slow);
    const local = capacityOf(of("local"), all, slow);
    expect(none.bound).toBe("pool");
    expect(local.bound).toBe("pool");
    expect(none.rps as number).toBeLessThan(400);
    expect(none.rps as number).toBeGreaterThan(0.75 * 400);
    // About: each is where its own p99 meets the target, and local's p99 has its hits in it.
    const ratio = (local.rps as number) / ((none.rps as number) / 0.29);
    expect(ratio).toBeGreaterThan(0.85);
    expect(ratio).toBeLessThan(1.15);
  });

  test("the pool bound is where the predicted p99 (the wait's tail over the miss's) reaches the target", () => {
    const slow = { ...inputs, target: { ...target, missCostMs: 9.3 } };
    const none = capacityOf(of("none"), all, slow);
    const rps = none.rps as number;
    const p99At = (r: number) => {
      const p = predictStrategy(of("none"), { ...slow.target, rateRps: r, pgPoolMax: 4 });
      if (typeof p === "string") throw new Error(p);
      return p.p99Ms as number;
    };
    expect(p99At(rps)).toBeLessThanOrEqual(100);
    expect(p99At(rps * 1.01)).toBeGreaterThan(100);
    // The wait alone at that rate is most of the 100 ms: M/M/4 held 10 ms.
    const wait = waitOf(4, 10, rps);
    expect(wait === null ? Number.POSITIVE_INFINITY : waitQuantileMs(wait, 0.99)).toBeGreaterThan(60);
  });

  test("a cheap miss and a large pool: the CPU binds (the event loop first), and a looser target lifts it", () => {
    const fast = { ...inputs, pgPoolMax: 100 };
    const none = capacityOf(of("none"), all, fast);
    expect(none.bound).toBe("event_loop");
    // One core for the server's 150 µs a request: under 1 ÷ 150 µs ≈ 6 667 rps.
    expect(none.rps as number).toBeLessThan(6_667);
    expect(none.rps as number).toBeGreaterThan(6_000);
    const tight = capacityOf(of("none"), all, { ...fast, p99TargetMs: 10 });
    expect(tight.rps as number).toBeLessThan(none.rps as number);
  });

  test("Redis binds when its CPU per command is the dearest part", () => {
    const heavy = baseRows().map((row) =>
      withHists(
        { ...row, pg_pool_max: 100 },
        row.strategy === "redis" ? [0.9, 0.2, 14] : CPU[String(row.strategy)],
      ),
    );
    const costs = allCosts(heavy).costs;
    const redis = capacityOf(costs.find((c) => c.strategy === "redis") as StrategyCosts, costs, {
      ...inputs,
      pgPoolMax: 100,
    });
    expect(redis.bound).toBe("redis");
    // 1 ms of Redis CPU per command at 1.42 commands a request (0.71 × 1 + 0.29 × 3): under 704 rps.
    expect(redis.rps as number).toBeLessThan(1_000 / 1.42);
  });

  test("without histograms there is no p99, so no capacity, and the reason says why", () => {
    const bare = allCosts(baseRows().map((row) => ({ ...row, pg_pool_max: 10 }))).costs;
    const none = capacityOf(bare.find((c) => c.strategy === "none") as StrategyCosts, bare, inputs);
    expect(none.rps).toBeNull();
    expect(none.reason).toContain("no srv_miss_hist");
  });
});

describe("a load tool on the same cores", () => {
  test("its CPU counts in the cpu bound when it shares them, and only then", () => {
    const shared = baseRows().map((row) =>
      withHists({ ...row, pg_pool_max: 100, loadgen_cpu_s: 3 }, CPU[String(row.strategy)]),
    );
    const costs = allCosts(shared).costs;
    const none = costs.find((c) => c.strategy === "none") as StrategyCosts;
    const apart = capacityOf(none, costs, { ...inputs, pgPoolMax: 100 });
    const beside = capacityOf(none, costs, { ...inputs, pgPoolMax: 100, loadgenShares: true });
    // 250 µs of the server's and Postgres's a request, 300 µs of the tool's: 2 cores ÷ 550 µs < 3 637 rps.
    expect(beside.bounds.cpu as number).toBeLessThan(3_637);
    expect(apart.bounds.cpu as number).toBeGreaterThan(7_000);
    expect(beside.notes.join()).not.toContain("is not counted");
    expect(apart.notes.join()).toContain(
      "the load tool's own CPU (loadgen_cpu_s in the base rows) is not counted",
    );
  });
});

describe("the peak cells", () => {
  // Peak cells: the same requests at a tenth of the base's CPU each, over 2 s, with the cores they got.
  const peakRows = (took: number, loadgen: number) =>
    baseRows().map((row) => {
      const [server, postgres, redis] = CPU[String(row.strategy)] as [number, number, number];
      const cpu: [number, number, number] = [server / 10, postgres / 10, redis / 10];
      const per = (cpuS: number) => (cpuS / (cpu[0] + cpu[1] + cpu[2])) * took;
      return withHists(
        {
          ...row,
          pg_pool_max: 100,
          achieved_rps: 5_000,
          server_cpu_per_s: per(cpu[0]),
          postgres_cpu_per_s: per(cpu[1]),
          redis_cpu_per_s: per(cpu[2]),
          loadgen_cpu_per_s: loadgen,
        },
        cpu,
      );
    });
  const fast = { ...inputs, pgPoolMax: 100, loadgenShares: true };

  test("saturated: the CPU bound takes their CPU per request, over the cores the servers got beside the tool", () => {
    const peak = allCosts(peakRows(1.2, 0.8)).costs;
    const light = capacityOf(of("none"), all, fast);
    const atPeak = capacityOf(of("none"), all, { ...fast, peak });
    // none at the peak: 25 µs a request over 1.2 cores: under 48 000 rps, ten times more than the base says.
    expect(atPeak.cpuPerRequestS?.server).toBeCloseTo(15e-6, 12);
    expect(atPeak.bounds.cpu as number).toBeLessThan(48_000);
    expect(atPeak.bounds.cpu as number).toBeGreaterThan(0.95 * 48_000);
    expect(atPeak.bounds.cpu as number).toBeGreaterThan(5 * (light.bounds.cpu as number));
    expect(atPeak.notes.join()).toContain("CPU per request from the peak cells (5000 rps)");
    expect(light.notes.join()).toContain("the cpu bound is a floor");
  });

  test("not saturated (a pool or a slow miss held them back): the base's figures, and it says so", () => {
    const peak = allCosts(peakRows(0.5, 0.6)).costs;
    const capacity = capacityOf(of("none"), all, { ...fast, peak });
    expect(capacity.notes.join()).toContain("the peak cells took 1.10 of 2 cores (not saturated)");
    expect(capacity.bounds.cpu).toBe(capacityOf(of("none"), all, fast).bounds.cpu);
  });
});
