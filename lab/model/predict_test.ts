import { describe, expect, test } from "bun:test";
import { bucketOf } from "../../server/load_timer.ts";
import { encodeHistogram, pooledPercentileMs } from "./histogram.ts";
import { baseRows, srvRow, withHists } from "./model_testing.ts";
import { outcomeShares, predictStrategy, type Target } from "./predict.ts";
import { mixShares, predictRow, targetOf } from "./predict_row.ts";
import { type Row, type StrategyCosts, strategyCosts } from "./tier_costs.ts";

function costsOf(rows: Row[], strategy: "none" | "local" | "redis" | "two_tier"): StrategyCosts {
  const costs = strategyCosts(rows, strategy);
  if (typeof costs === "string") throw new Error(costs);
  return costs;
}

const plain: Target = {
  missCostMs: 0,
  redisRttMs: 0,
  hitRatio: 0.8,
  l1HitRatio: 0.8,
  writeRatio: 0,
  listShare: 0,
};

describe("the model's prediction", () => {
  test("hand-computed: M = 20 ms, R = 0.5 ms at hit ratio 0.8", () => {
    const rows = baseRows();
    const at = { ...plain, missCostMs: 20, redisRttMs: 0.5 };
    const mean = (s: "none" | "local" | "redis" | "two_tier") => {
      const p = predictStrategy(costsOf(rows, s), at);
      if (typeof p === "string") throw new Error(p);
      return p.meanMs;
    };
    expect(mean("none")).toBeCloseTo(0.8 + 20, 9);
    // 0.8 × 0.015 + 0.2 × (0.8 + 20)
    expect(mean("local")).toBeCloseTo(4.172, 9);
    // 0.8 × (0.2 + 0.5) + 0.2 × (1.0 + 20 + 2 × 0.5): a miss waits for the GET and the generation read.
    expect(mean("redis")).toBeCloseTo(4.96, 9);
    // L1 0.8 of 0.8: 0.8 × 0.02 + 0.2 × (1.05 + 20 + 1)
    expect(mean("two_tier")).toBeCloseTo(4.426, 9);
  });

  test("the terms, Redis commands per request and database queries per request", () => {
    const p = predictStrategy(costsOf(baseRows(), "two_tier"), { ...plain, l1HitRatio: 0.5, redisRttMs: 1 });
    if (typeof p === "string") throw new Error(p);
    expect(p.terms.map((t) => [t.outcome, t.share])).toEqual([
      ["l1_hit", 0.5],
      ["l2_hit", expect.closeTo(0.3, 9)],
      ["miss", expect.closeTo(0.2, 9)],
    ]);
    // 0.3 GETs + 0.2 × (GET, generation read, fill)
    expect(p.redisCmdsPerRequest).toBeCloseTo(0.3 + 0.6, 9);
    expect(p.dbQueriesPerRequest).toBeCloseTo(0.2, 9);
    expect(p.slopeRedisMs).toBeCloseTo(0.3 + 0.4, 9);
    expect(p.meanMs).toBeCloseTo(p.interceptMs + p.slopeRedisMs * 1, 9);
    expect(p.formula).toBe("0.5×(0.02) + 0.3×(0.25 + 1×1) + 0.2×(1.05 + 0×1 + 1×2)");
  });

  test("identity: the base rows predicted from themselves with M = R = 0 give their measured means", () => {
    const rows = baseRows();
    for (const strategy of ["none", "local", "redis", "two_tier"] as const) {
      const costs = costsOf(rows, strategy);
      const own = { ...plain, hitRatio: costs.hitRatioExpected, l1HitRatio: costs.l1HitRatioExpected };
      const p = predictStrategy(costs, own);
      if (typeof p === "string") throw new Error(p);
      expect(p.meanMs).toBeCloseTo(costs.srvMeanMs as number, 9);
    }
    // Up to the hit-ratio mix: a simulation 0.02 above the measured mix moves redis by 0.02 × (1.0 − 0.2).
    const redis = costsOf(rows, "redis");
    const p = predictStrategy(redis, { ...plain, hitRatio: 0.82 });
    if (typeof p === "string") throw new Error(p);
    expect(p.meanMs - (redis.srvMeanMs as number)).toBeCloseTo(-0.02 * 0.8, 9);
  });

  test("M and R count beyond what the base run itself added", () => {
    const rows = [srvRow("none", { miss_cost_ms: 5 })];
    const p = predictStrategy(costsOf(rows, "none"), { ...plain, missCostMs: 20 });
    if (typeof p === "string") throw new Error(p);
    expect(p.meanMs).toBeCloseTo(0.8 + 15, 9);
    expect(p.interceptMs).toBeCloseTo(0.8 - 5, 9);
  });

  test("the plan's figures, never the pings measured inside a cell, are the added round trips", () => {
    // A target row whose pings through its proxies read more than its plan (Toxiproxy under load).
    const target = srvRow("redis", {
      attack: "zipf_reads",
      miss_cost_added_ms: 2,
      redis_rtt_added_ms: 1,
      postgres_path_rtt_ms: 2.7,
      redis_path_rtt_ms: 1.5,
    });
    const wanted = targetOf(target);
    if (typeof wanted === "string") throw new Error(wanted);
    expect(wanted).toMatchObject({ missCostMs: 2, redisRttMs: 1 });
    const p = predictStrategy(costsOf(baseRows(), "redis"), wanted);
    if (typeof p === "string") throw new Error(p);
    // 0.8 × (0.2 + 1) + 0.2 × (1.0 + 2 + 2 × 1)
    expect(p.meanMs).toBeCloseTo(1.96, 9);
  });

  test("a CSV from before the *_added_ms columns: miss_cost_ms and redis_rtt_ms read as the added delay", () => {
    const old = targetOf(srvRow("redis", { miss_cost_ms: 2, redis_rtt_ms: 1 }));
    const current = targetOf(
      srvRow("redis", {
        miss_cost_ms: 5,
        miss_cost_added_ms: 4.6,
        redis_rtt_ms: 1,
        redis_rtt_added_ms: 0.95,
      }),
    );
    expect(old).toMatchObject({ missCostMs: 2, redisRttMs: 1 });
    expect(current).toMatchObject({ missCostMs: 4.6, redisRttMs: 0.95 });
  });

  test("writes: their own mean when measured, else estimated from the miss and said so", () => {
    const withWrites = [srvRow("redis", { srv_write_count: 500, srv_write_mean_ms: 1.5 })];
    const measured = predictStrategy(costsOf(withWrites, "redis"), {
      ...plain,
      writeRatio: 0.1,
      redisRttMs: 1,
    });
    if (typeof measured === "string") throw new Error(measured);
    // 0.9 × 0.8 × (0.2 + 1) + 0.9 × 0.2 × (1.0 + 2) + 0.1 × (1.5 + 1)
    expect(measured.meanMs).toBeCloseTo(0.864 + 0.54 + 0.25, 9);
    expect(measured.terms.find((t) => t.outcome === "write")?.estimated).toBeNull();
    const estimated = predictStrategy(costsOf([srvRow("redis")], "redis"), { ...plain, writeRatio: 0.1 });
    if (typeof estimated === "string") throw new Error(estimated);
    // A redis write waits 1 round trip where its miss waits 2: 1.0 − 0.12.
    expect(estimated.terms.find((t) => t.outcome === "write")).toMatchObject({
      baseMs: expect.closeTo(0.88, 9),
      estimated: "no writes in the base rows: a miss − 1 Redis command(s) of 0.12 ms",
    });
    const noCmd = predictStrategy(costsOf([srvRow("redis", { redis_cmd_mean_ms: null })], "redis"), {
      ...plain,
      writeRatio: 0.1,
    });
    expect(noCmd).toBe("redis: no write cost, and no redis_cmd_mean_ms to estimate it from its miss");
  });

  test("list pages add redis's generation GET to every read's path", () => {
    const p = predictStrategy(costsOf(baseRows(), "redis"), { ...plain, listShare: 0.5, redisRttMs: 1 });
    if (typeof p === "string") throw new Error(p);
    expect(p.slopeRedisMs).toBeCloseTo(0.8 * 1.5 + 0.2 * 2.5, 9);
    expect(p.redisCmdsPerRequest).toBeCloseTo(0.8 + 0.6 + 0.5, 9);
    const local = predictStrategy(costsOf(baseRows(), "local"), { ...plain, listShare: 0.5, redisRttMs: 1 });
    if (typeof local === "string") throw new Error(local);
    expect(local.slopeRedisMs).toBe(0);
  });

  test("shares: refusals for a missing hit ratio and an L1 above the whole", () => {
    expect(outcomeShares("redis", { ...plain, hitRatio: null })).toBe(
      "redis: no hit ratio (hit_ratio_expected) for the target",
    );
    expect(outcomeShares("two_tier", { ...plain, l1HitRatio: 0.9 })).toBe(
      "two_tier: L1 hit ratio 0.9 above the hit ratio 0.8",
    );
    expect(outcomeShares("local", { ...plain, l1HitRatio: null, hitRatio: 0.6 })).toMatchObject({
      l1_hit: 0.6,
    });
    const missing = predictStrategy(costsOf([srvRow("local", { srv_l1_hit_count: 3 })], "local"), plain);
    expect(missing).toBe(
      "local: no l1_hit cost: fewer than 30 l1_hit requests in every valid repeat (at most 3)",
    );
  });

  test("request_mix: write share of requests, list share of reads", () => {
    expect(
      mixShares(
        "list:80:GET /products?category={category}&page={page}&size=20 | detail:20:GET /products/{id}",
      ),
    ).toEqual({
      writeRatio: 0,
      listShare: 0.8,
    });
    expect(mixShares("detail:90:GET /products/{id} | update:10:PUT /products/{id}")).toEqual({
      writeRatio: 0.1,
      listShare: 0,
    });
    expect(mixShares("nonsense")).toBeNull();
    expect(mixShares(null)).toBeNull();
  });
});

describe("predictRow (what main writes per row)", () => {
  const run = "20261202T000000-test";
  const target = (strategy: string, overrides: Row = {}) =>
    srvRow(strategy, {
      attack: "zipf_reads",
      miss_cost_ms: 20,
      redis_rtt_ms: 0.5,
      // The cell's own means must never be used: make them absurd.
      srv_l2_hit_mean_ms: 999,
      srv_miss_mean_ms: 999,
      ...overrides,
    });

  test("from the X_base cells of the same run, named in predicted_from", () => {
    const result = predictRow(baseRows(2), target("redis"));
    expect(result.reason).toBeNull();
    expect(result.predictedMeanMs).toBeCloseTo(4.96, 9);
    expect(result.predictedFrom).toBe(`zipf_reads_base of run ${run} (2 valid repeats)`);
  });

  test("none without base cells, for a base cell itself, and for a base from another run", () => {
    expect(predictRow([], target("redis")).reason).toBe(
      `no zipf_reads_base cells in run ${run} (nothing added, no base to predict from)`,
    );
    expect(predictRow(baseRows(), srvRow("redis")).reason).toBe(
      "zipf_reads_base is a base cell: its costs are the model's input",
    );
    const other = baseRows(1, { run_id: "other" });
    expect(predictRow(other, target("redis")).predictedMeanMs).toBeNull();
    expect(predictRow(baseRows(), target("redis", { hit_ratio_expected: null })).reason).toBe(
      `zipf_reads_base of run ${run}: redis: no hit ratio (hit_ratio_expected) for the target`,
    );
  });

  test("from a named earlier run: its base cells, else the attack it names", () => {
    const earlier = baseRows(1, { run_id: "20261101T000000-old", attack: "zipf_reads" });
    const result = predictRow([], target("none"), { from: { rows: earlier, runId: "20261101T000000-old" } });
    expect(result.predictedMeanMs).toBeCloseTo(20.8, 9);
    expect(result.predictedFrom).toBe("zipf_reads of run 20261101T000000-old (1 valid repeat)");
  });
});

describe("the p99: a mixture of the base's measured distributions", () => {
  const rows = baseRows().map((row) => withHists({ ...row, pg_pool_max: 10 }));
  const costs = (s: "none" | "local" | "redis" | "two_tier") => costsOf(rows, s);
  const light = plain;
  const p99 = (s: "none" | "local" | "redis" | "two_tier", target: Target) => {
    const p = predictStrategy(costs(s), target);
    if (typeof p === "string") throw new Error(p);
    return p;
  };

  test("predicted from itself, a base's p99 is its own; an added miss cost moves none's p99 by exactly that", () => {
    const own = pooledPercentileMs([rows[0]?.srv_miss_hist], 99) as number;
    expect(p99("none", light).p99Ms).toBe(own);
    expect(p99("none", { ...light, missCostMs: 10 }).p99Ms).toBeCloseTo(own + 10, 9);
  });

  test("local at 0.8: the misses' tail (20% of requests) sets the p99, not an average of p99s", () => {
    // The misses' 2% tail at 4.8 ms is 0.4% of requests: under the p99, so the p99 is the misses' body.
    const p = p99("local", { ...light, missCostMs: 10 }).p99Ms as number;
    expect(p).toBeGreaterThan(10 + 0.8);
    expect(p).toBeLessThan(10 + 1.25);
    // At 0.99 hits the misses are 1%: the p99 falls among the hits' tail.
    expect(p99("local", { ...light, hitRatio: 0.99, l1HitRatio: 0.99, missCostMs: 10 }).p99Ms).toBeLessThan(
      1,
    );
  });

  test("a busy pool: the mean and the p99 take its wait; a saturated one is outside the model", () => {
    const busy = { ...light, missCostMs: 9.3, rateRps: 370, pgPoolMax: 4 };
    const quiet = p99("none", { ...light, missCostMs: 9.3 });
    const waited = p99("none", busy);
    expect(waited.meanMs).toBeGreaterThan(quiet.meanMs + 1);
    expect(waited.p99Ms as number).toBeGreaterThan((quiet.p99Ms as number) + 10);
    expect(waited.outside).toContain("busy");
    const over = p99("none", { ...busy, rateRps: 500 });
    expect(over.saturated).toBe(true);
    expect(over.outside).toContain("saturates");
    const row = withHists(
      srvRow("none", {
        attack: "zipf_reads",
        load_model: "open",
        offered_rps: 500,
        pg_pool_max: 4,
        pg_acquire_timeout_ms: 5_000, // the database gate on: a load holds its connection
        miss_cost_added_ms: 9.3,
      }),
    );
    const base = rows.map((r) => ({ ...r, attack: "zipf_reads_base" }));
    expect(predictRow([...base, row], row).reason).toStartWith(
      "outside the model: the database pool saturates",
    );
  });

  test("the client's p99: the server's moved by what HTTP added to the base's p50, where the base measured it", () => {
    const server = p99("none", light);
    expect(server.clientP99Ms).toBeNull(); // the rows have no latency_p50_ms
    const p50 = pooledPercentileMs([rows[0]?.srv_miss_hist], 50) as number;
    const withClient = rows.map((row) => ({ ...row, latency_p50_ms: p50 + 0.3 }));
    const p = predictStrategy(costsOf(withClient, "none"), light);
    if (typeof p === "string") throw new Error(p);
    expect(p.clientP99Ms as number).toBeCloseTo((p.p99Ms as number) + 0.3, 9);
  });

  test("no histogram in the base rows: a mean, no p99, and the reason", () => {
    const p = predictStrategy(costsOf(baseRows(), "none"), light);
    if (typeof p === "string") throw new Error(p);
    expect(p.p99Ms).toBeNull();
    expect(p.p99Reason).toContain("no srv_miss_hist in the base rows");
  });
});

describe("predictRow borrows redis's Redis hit", () => {
  test("a two_tier whose L1 answered every hit in the base cells is predicted with redis's GET, not refused", () => {
    const base = baseRows().map((row) =>
      row.strategy === "two_tier" ? { ...row, srv_l2_hit_count: 0, srv_l2_hit_mean_ms: null } : row,
    );
    const target = srvRow("two_tier", { attack: "zipf_reads", redis_rtt_added_ms: 1, miss_cost_added_ms: 0 });
    const p = predictRow([...base, target], target);
    if (p.predictedMeanMs === null) throw new Error(p.reason);
    // 0.7 × 0.02 + 0.1 × (0.2 + 1) + 0.2 × (1.05 + 2 × 1): redis's 0.2 ms Redis hit in the L2 term.
    expect(p.predictedMeanMs).toBeCloseTo(0.014 + 0.12 + 0.61, 9);
  });
});

describe("a p99 on a step of the distribution", () => {
  // 1% of the misses at 3.5 ms, the rest at 0.5: the p99 is the step's top or bottom as the share moves.
  const cell = encodeHistogram([
    [bucketOf(0.5), 990],
    [bucketOf(3.5), 10],
  ]);
  const base = baseRows().map((row) => ({ ...row, srv_miss_hist: row.strategy === "none" ? cell : "" }));

  test("is said, not predicted, in a row: half a per cent either way moves it past 35%", () => {
    const target = srvRow("none", { attack: "zipf_reads", miss_cost_added_ms: 2 });
    const p = predictRow([...base, target], target);
    expect(p.predictedMeanMs).not.toBeNull();
    expect(p.predictedP99Ms).toBeNull();
    expect(p.p99Reason).toStartWith(
      "outside the model: the p99 falls on a step of the distribution (p98.5 2.49 ms, p99 2.49, p99.5 5.52)",
    );
  });

  test("a tail well past 1% is no step: its p99 is predicted", () => {
    const fat = encodeHistogram([
      [bucketOf(0.5), 950],
      [bucketOf(3.5), 50],
    ]);
    const rows = baseRows().map((row) => ({ ...row, srv_miss_hist: row.strategy === "none" ? fat : "" }));
    const target = srvRow("none", { attack: "zipf_reads", miss_cost_added_ms: 2 });
    const p = predictRow([...rows, target], target);
    expect(p.predictedP99Ms as number).toBeCloseTo(5.5, 0);
    expect(p.p99Reason).toBeNull();
  });
});

describe("a pool that pipelines", () => {
  test("the lab's server without its database gate queues nothing at the pool: a row from it is predicted, not saturated", () => {
    const rows = baseRows().map((row) => withHists({ ...row, pg_pool_max: 10 }));
    const base = rows.map((r) => ({ ...r, attack: "m_base" }));
    const cell = (gate: Row) =>
      withHists(
        srvRow("none", {
          attack: "m",
          load_model: "open",
          offered_rps: 1000,
          pg_pool_max: 10,
          miss_cost_added_ms: 9.8,
          ...gate,
        }),
      );
    const open = cell({ pg_queue_max: 0, pg_acquire_timeout_ms: 0 });
    const gated = cell({ pg_queue_max: 0, pg_acquire_timeout_ms: 5_000 });
    const from = { from: { rows: base, runId: "20261202T000000-test", attack: "m_base" } };
    // 1 000 loads/s × 10.5 ms over 10 connections: 105% busy only where a load holds its connection.
    expect(predictRow([], open, from).predictedMeanMs as number).toBeCloseTo(0.8 + 9.8, 9);
    expect(predictRow([], gated, from).reason).toStartWith("outside the model: the database pool saturates");
  });
});
