import { describe, expect, test } from "bun:test";
import { baseRows, srvRow } from "./model_testing.ts";
import { allCosts, hasServerCosts, MIN_OUTCOME_COUNT, numeric, strategyCosts } from "./tier_costs.ts";

describe("tier costs", () => {
  test("per outcome, the median over valid repeats of the server-side means", () => {
    const rows = [
      srvRow("redis", { repeat: 1, srv_l2_hit_mean_ms: 0.2 }),
      srvRow("redis", { repeat: 2, srv_l2_hit_mean_ms: 0.4 }),
      srvRow("redis", { repeat: 3, srv_l2_hit_mean_ms: 0.3 }),
      srvRow("redis", { repeat: 4, srv_l2_hit_mean_ms: 9, valid: false }),
    ];
    const costs = strategyCosts(rows, "redis");
    if (typeof costs === "string") throw new Error(costs);
    expect(costs.repeats).toBe(3);
    expect(costs.outcomesMs).toEqual({ l2_hit: 0.3, miss: 1.0 });
    expect(costs.redisCmdMs).toBe(0.12);
    expect(costs.dbLoadMs).toBe(0.7);
    // redis has no in-process tier: l1_hit is not one of its outcomes, so not missing either.
    expect(costs.missing).toEqual({
      write: `fewer than ${MIN_OUTCOME_COUNT} write requests in every valid repeat (at most 0)`,
    });
  });

  test("a mean from a repeat with too few requests of the outcome is not used", () => {
    const rows = [
      srvRow("local", { repeat: 1, srv_l1_hit_count: MIN_OUTCOME_COUNT - 1, srv_l1_hit_mean_ms: 5 }),
      srvRow("local", { repeat: 2, srv_l1_hit_count: MIN_OUTCOME_COUNT, srv_l1_hit_mean_ms: 0.02 }),
    ];
    const costs = strategyCosts(rows, "local");
    if (typeof costs === "string") throw new Error(costs);
    expect(costs.outcomesMs.l1_hit).toBe(0.02);
    const few = strategyCosts([rows[0] as (typeof rows)[0]], "local");
    if (typeof few === "string") throw new Error(few);
    expect(few.outcomesMs.l1_hit).toBeUndefined();
    expect(few.missing.l1_hit).toBe(`fewer than 30 l1_hit requests in every valid repeat (at most 29)`);
  });

  test("the model's miss is a request that waited on a load: the server's misses and joins, by their counts", () => {
    const rows = [
      srvRow("redis", {
        srv_miss_count: 300,
        srv_miss_mean_ms: 1.2,
        srv_join_count: 100,
        srv_join_mean_ms: 0.4,
      }),
    ];
    const costs = strategyCosts(rows, "redis");
    if (typeof costs === "string") throw new Error(costs);
    expect(costs.outcomesMs.miss).toBeCloseTo((300 * 1.2 + 100 * 0.4) / 400, 10);
    const shares = costs.measuredShares as Record<string, number>;
    const before = strategyCosts([srvRow("redis", { srv_miss_count: 300, srv_miss_mean_ms: 1.2 })], "redis");
    if (typeof before === "string") throw new Error(before);
    expect(shares.miss).toBeGreaterThan((before.measuredShares as Record<string, number>).miss as number);
    // A row from before joins were counted apart has no srv_join_* columns: its misses alone.
    expect(before.outcomesMs.miss).toBe(1.2);
  });

  test("a missing or empty column is unknown, never 0; counts read as text are numbers", () => {
    const old = srvRow("none", { srv_miss_mean_ms: null, srv_mean_ms: "", db_load_ms_mean: "0.7" });
    const counted = srvRow("none", { srv_miss_count: "40", srv_miss_mean_ms: "0.9" });
    const costs = strategyCosts([old], "none");
    if (typeof costs === "string") throw new Error(costs);
    expect(costs.missing.miss).toBe("no srv_miss_mean_ms in the rows");
    expect(costs.srvMeanMs).toBeNull();
    expect(costs.dbLoadMs).toBe(0.7);
    expect(hasServerCosts([old])).toBe(false);
    expect(hasServerCosts(baseRows())).toBe(true);
    const fromText = strategyCosts([counted], "none");
    if (typeof fromText === "string") throw new Error(fromText);
    expect(fromText.outcomesMs.miss).toBe(0.9);
    expect(strategyCosts([srvRow("none", { srv_miss_count: null })], "none")).toMatchObject({
      missing: { miss: "no srv_miss_count in the rows" },
    });
    expect(numeric("12")).toBe(12);
    expect(numeric("")).toBeNull();
    expect(strategyCosts([srvRow("none", { valid: false })], "none")).toBe("none: no valid rows");
  });

  test("what the base run itself added per round trip is kept, 0 when not recorded", () => {
    const costs = strategyCosts([srvRow("redis", { miss_cost_ms: 5, redis_rtt_ms: null })], "redis");
    if (typeof costs === "string") throw new Error(costs);
    expect(costs.addedMissMs).toBe(5);
    expect(costs.addedRedisRttMs).toBe(0);
  });

  test("allCosts: every strategy of the rows, with the reason for those without costs", () => {
    const rows = [...baseRows().filter((r) => r.strategy !== "none"), srvRow("none", { valid: false })];
    const { costs, skipped } = allCosts(rows);
    expect(costs.map((c) => c.strategy)).toEqual(["local", "redis", "two_tier"]);
    expect(skipped).toEqual(["none: no valid rows"]);
  });
});
