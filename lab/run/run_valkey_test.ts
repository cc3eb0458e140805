/**
 * `--redis-server valkey` for real: every Redis tier (redis, two_tier, and tracking with its CLIENT TRACKING
 * pushes) on the lab's valkey-server, a short open-model run each; the rows are valid, name Valkey and its own
 * version (not the Redis version it reports for compatibility) and what the server's client heard in HELLO,
 * count no cache error, find their entries on Valkey, and their hit ratios equal their simulation of the same
 * stream.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import type { Services } from "../services/lifecycle.ts";
import { runExperiment } from "./run_experiment.ts";
import { detailReads, num, runRows, seededServices, testExperiment } from "./run_testing.ts";

const VALKEY_VERSION = "9.1.2"; // install-deps.sh's pin

let services: Services;

beforeAll(async () => {
  services = await seededServices();
});

describe("a run on Valkey", () => {
  test("redis, two_tier and tracking on Valkey: valid rows naming Valkey 9.1.2, hit ratios equal to their simulation", async () => {
    const experiment = testExperiment([detailReads()], {
      strategies: ["none", "redis", "two_tier", "tracking"],
    });
    const rows = await runRows(experiment, { name: "valkey", services, redisServer: "valkey" });
    if (typeof rows === "string") throw new Error(rows);
    expect(rows.map((row) => row.strategy)).toEqual(["none", "redis", "two_tier", "tracking"]);
    for (const row of rows) {
      expect({ strategy: row.strategy, invalid: row.invalid_reason }).toEqual({
        strategy: row.strategy,
        invalid: "",
      });
      // The run's Redis is Valkey in every row, none's included: its CPU and memory are Valkey's.
      expect([row.redis_server, row.redis_version]).toEqual(["valkey", VALKEY_VERSION]);
      if (row.strategy === "none") continue;
      // What the server's own client heard in HELLO, not what the lab assumed.
      expect(row.redis_client).toContain(` resp3 valkey=${VALKEY_VERSION} `);
      expect(num(row, "cache_errors")).toBe(0);
      expect(num(row, "redis_entries")).toBeGreaterThan(0);
      expect(num(row, "hit_ratio")).toBeGreaterThan(0.3);
      expect(Math.abs(num(row, "hit_ratio") - num(row, "hit_ratio_expected"))).toBeLessThanOrEqual(0.02);
    }
    expect(rows.find((row) => row.strategy === "tracking")?.redis_client).toContain("tracking=on");
  }, 120_000);

  test("a run on Redis (the default) says so in its rows", async () => {
    const experiment = testExperiment([detailReads({ durationS: 1 })], { strategies: ["redis"] });
    const rows = await runRows(experiment, { name: "on-redis", services });
    if (typeof rows === "string") throw new Error(rows);
    expect(rows[0]?.redis_server).toBe("redis");
    expect(rows[0]?.redis_version).toBe(services.redis.version as string);
    expect(rows[0]?.redis_client).toContain(` redis=${services.redis.version} `);
  }, 60_000);

  test("the plan names the valkey-server a run uses, a dry run too, without starting it", async () => {
    const lines: string[] = [];
    const summary = await runExperiment(testExperiment([detailReads()], { strategies: ["redis"] }), {
      name: "valkey-dry",
      services,
      redisServer: "valkey",
      dryRun: true,
      log: (line) => lines.push(line),
      status: () => {},
    });
    expect(typeof summary).not.toBe("string");
    expect(lines.find((line) => line.startsWith("redis: every Redis tier"))).toMatch(
      /on Valkey \(--redis-server valkey\), REDIS_URL on every server: the lab's own valkey-server beside its Redis, \S+ \(Valkey server v=9\.1\.2\)/,
    );
  });
});
