/**
 * `--redis-cluster` run for real: redis and two_tier's servers on the lab's three-master Redis Cluster, a short
 * open-model run each; the rows are valid, say the cluster in redis_client, count no cache error, find the
 * entries on the masters, and their hit ratios equal their simulation of the same stream. And a cell a
 * cluster cannot carry is refused before anything runs (the command line refuses --server-url with it).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import type { Services } from "../services/lifecycle.ts";
import { REDIS_CLUSTER_LINE, runExperiment } from "./run_experiment.ts";
import { detailReads, num, runRows, seededServices, testExperiment } from "./run_testing.ts";

let services: Services;

beforeAll(async () => {
  services = await seededServices();
});

describe("a run on the lab's Redis Cluster", () => {
  for (const redisClient of ["ioredis", "node-redis"] as const) {
    test(`redis and two_tier on ${redisClient}: valid rows on the cluster, no cache error, hit ratios equal to their simulation`, async () => {
      const experiment = testExperiment([detailReads()], {
        strategies: ["redis", "two_tier"],
        server: { redisClient },
      });
      const rows = await runRows(experiment, { name: "cluster", services, redisCluster: true });
      if (typeof rows === "string") throw new Error(rows);
      expect(rows.map((row) => row.strategy)).toEqual(["redis", "two_tier"]);
      for (const row of rows) {
        expect({ strategy: row.strategy, invalid: row.invalid_reason }).toEqual({
          strategy: row.strategy,
          invalid: "",
        });
        expect(row.redis_client).toMatch(/^(ioredis \S+ Cluster|node-redis \S+ cluster) masters=3 /);
        expect(row.redis_client?.startsWith(redisClient)).toBe(true);
        expect(num(row, "cache_errors")).toBe(0);
        expect(num(row, "redis_entries")).toBeGreaterThan(0);
        expect(num(row, "hit_ratio")).toBeGreaterThan(0.3);
        expect(Math.abs(num(row, "hit_ratio") - num(row, "hit_ratio_expected"))).toBeLessThanOrEqual(0.02);
      }
    });
  }

  test("the plan says the run is on the cluster, a dry run too", async () => {
    const lines: string[] = [];
    const experiment = testExperiment([detailReads()], { strategies: ["redis"] });
    const summary = await runExperiment(experiment, {
      name: "cluster-dry",
      services,
      redisCluster: true,
      dryRun: true,
      log: (line) => lines.push(line),
      status: () => {},
    });
    expect(typeof summary).not.toBe("string");
    expect(lines).toContain(REDIS_CLUSTER_LINE);
  });

  test("tracking is skipped on the cluster, saying why, and a run of tracking alone is refused", async () => {
    const lines: string[] = [];
    const both = testExperiment([detailReads()], { strategies: ["redis", "tracking"] });
    const run = (experiment: typeof both) =>
      runExperiment(experiment, {
        name: "cluster-tracking",
        services,
        redisCluster: true,
        dryRun: true,
        log: (line) => lines.push(line),
        status: () => {},
      });
    const summary = await run(both);
    if (typeof summary === "string") throw new Error(summary);
    const why = "node-redis's cluster client hands over no invalidation pushes (no emitInvalidate)";
    expect(lines).toContain(`skipped tracking on the Redis Cluster: ${why}`);
    expect(lines.some((line) => /tracking r1/.test(line))).toBe(false);
    expect(await run({ ...both, strategies: ["tracking"] })).toBe(
      `cluster-tracking cannot run tracking on a Redis Cluster: ${why}`,
    );
  });

  test("refuses a node-redis cell without --redis-cluster: node-redis is the cluster's client only", async () => {
    const onNode = testExperiment([detailReads()], {
      strategies: ["redis"],
      server: { redisClient: "node-redis" },
    });
    expect(await runRows(onNode, { name: "single-node-redis", services })).toBe(
      "single-node-redis cannot run cell 1 (redis) on one Redis: node-redis is the lab's client for tracking and a Redis Cluster only; add --redis-cluster",
    );
  });

  test("refuses a cell a cluster cannot carry (Bun's client) before anything runs", async () => {
    const onBun = testExperiment([detailReads()], { strategies: ["redis"], server: { redisClient: "bun" } });
    const refused = await runRows(onBun, { name: "cluster-bun", services, redisCluster: true });
    expect(refused).toBe(
      "cluster-bun cannot run on a Redis Cluster: cell 1 (redis) runs on Bun's RedisClient, which has no cluster support",
    );
  });
});
