/**
 * The staleness checker run for real on two instances: each strategy's windows against its stated bound,
 * and the check firing on a strategy that leaves the old row cached after a write.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { stalenessBoundMs, stalenessChecker } from "../cell/staleness.ts";
import { nearestRank as percentile } from "../load/request_timeline.ts";
import type { Experiment } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { num, type Row, runRows, seededServices, TEST_SEED } from "./run_testing.ts";

const SEED = TEST_SEED;
let services: Services;

beforeAll(async () => {
  services = await seededServices();
});

function experiment(overrides: Partial<Experiment> = {}): Experiment {
  return {
    question: "test",
    expect: "test",
    strategies: ["local", "redis", "two_tier", "tracking"],
    repeats: 1,
    seed: SEED,
    tools: ["vegeta"],
    // local's bound is its TTL: short, so each check ends in well under a second.
    server: { instances: 2, cacheTtlMs: 400, l1TtlMs: 400 },
    attacks: [
      {
        name: "reads_and_writes",
        model: { kind: "open", rateRps: 200 },
        durationS: 3,
        warmupS: 1,
        requests: [
          { name: "detail", weight: 9, method: "GET", path: "/products/{id}" },
          {
            name: "update",
            weight: 1,
            method: "PUT",
            path: "/products/{id}",
            body: '{"stock":{s}}',
            vars: { s: { min: 0, max: 9 } },
          },
        ],
        keys: { distribution: { kind: "uniform" }, seed: 3, keyspace: 200 },
      },
    ],
    during: stalenessChecker({ marginMs: 100 }),
    ...overrides,
  };
}

async function run(exp: Experiment, serverEntry?: string): Promise<Row[]> {
  const rows = await runRows(exp, { name: "staleness", services, serverEntry });
  if (typeof rows === "string") throw new Error(rows);
  return rows;
}

describe("staleness windows", () => {
  test("each strategy's bound as its header states it", () => {
    expect(stalenessBoundMs("local", { cacheTtlMs: 400 })).toBe(400);
    expect(stalenessBoundMs("redis", { cacheTtlMs: 400 })).toBe(0);
    expect(stalenessBoundMs("two_tier", { cacheTtlMs: 400 })).toBe(0);
    expect(stalenessBoundMs("tracking", { cacheTtlMs: 400 })).toBe(0);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(percentile([], 50)).toBeNull();
  });

  test("on two instances: redis ≈ 0, two_tier ≈ the bus delay, tracking ≈ the push's, local up to its TTL, every row within its bound", async () => {
    const rows = await run(experiment());
    const [local, redis, twoTier, tracking] = rows;
    for (const row of rows) {
      expect(row.invalid_reason).toBe("");
      expect(num(row, "staleness_windows")).toBeGreaterThanOrEqual(5);
      expect(num(row, "stale_beyond_bound")).toBe(0);
    }
    expect(num(redis, "staleness_max_ms")).toBe(0); // its DEL lands before the PUT answers
    expect(num(twoTier, "staleness_max_ms")).toBeLessThan(50);
    expect(num(tracking, "staleness_max_ms")).toBeLessThan(50);
    // local: the other instance keeps its copy until its TTL.
    expect(num(local, "staleness_p50_ms")).toBeGreaterThan(100);
    expect(num(local, "staleness_max_ms")).toBeLessThanOrEqual(500);
    expect(num(local, "stale_read_ratio")).toBeGreaterThan(0.5);
    expect(num(local, "staleness_bound_ms")).toBe(500);
  });

  test("a strategy that leaves the old row cached after a write is caught past its bound", async () => {
    const rows = await run(
      experiment({ strategies: ["redis"] }),
      join(import.meta.dir, "testdata", "no_delete_server.ts"),
    );
    expect(rows[0]?.valid).toBe("false");
    expect(rows[0]?.invalid_reason).toContain("past the strategy's staleness bound (0 ms + 100 ms margin)");
    expect(num(rows[0], "stale_beyond_bound")).toBeGreaterThan(0);
  });
});
