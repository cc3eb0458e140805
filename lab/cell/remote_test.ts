import { describe, expect, test } from "bun:test";
import type { ServerInfo } from "../../server/lab_routes.ts";
import type { StrategyName } from "../../server_config.ts";
import { type Experiment, serverSettings } from "../plan/experiment_plan.ts";
import { type RemoteServer, remoteMismatch, serverEnvironment } from "./remote.ts";

const experiment = { server: {} } as unknown as Experiment;
const planned = serverSettings(experiment);

function remote(strategy: StrategyName, settings: Partial<ServerInfo["settings"]> = {}): RemoteServer {
  return {
    remote: true,
    url: "http://10.0.0.5:3000",
    port: 3000,
    pid: 1,
    adminToken: null,
    output: () => "",
    stop: async () => null,
    cpuLimit: null,
    cpuThrottling: () => null,
    info: {
      strategy,
      settings: { ...planned, redisKeyPrefix: "cachelab:", ...settings },
    } as unknown as ServerInfo,
  };
}

const cell = (strategy: StrategyName) => ({ strategy, attacks: [] });

describe("which cells a server the lab did not start can stand for", () => {
  test("the same strategy and settings match; another strategy or setting is named with both values", () => {
    expect(remoteMismatch([remote("redis")], cell("redis"), planned)).toBeNull();
    expect(remoteMismatch([remote("local")], cell("redis"), planned)).toBe(
      "http://10.0.0.5:3000 runs strategy local, not redis",
    );
    expect(remoteMismatch([remote("redis", { pgPoolMax: 4 })], cell("redis"), planned)).toBe(
      "http://10.0.0.5:3000 runs PG_POOL_MAX=4, not 10",
    );
  });

  test("a setting the strategy does not use is not compared", () => {
    const other = {
      cacheTtlMs: 1_000,
      l1TtlMs: 1,
      l1MaxEntries: 5,
      earlyRefreshBeta: 2,
      redisClient: "bun",
    } as const;
    expect(remoteMismatch([remote("none", other)], cell("none"), planned)).toBeNull();
    expect(
      remoteMismatch([remote("local", { l1TtlMs: 1, redisClient: "bun" })], cell("local"), planned),
    ).toBeNull();
    expect(
      remoteMismatch([remote("redis", { l1TtlMs: 1, l1MaxEntries: 5 })], cell("redis"), planned),
    ).toBeNull();
    expect(remoteMismatch([remote("two_tier", { l1TtlMs: 1 })], cell("two_tier"), planned)).toBe(
      "http://10.0.0.5:3000 runs L1_TTL_MS=1, not 5000",
    );
  });

  test("what only the lab can do to its own processes and paths is refused, and the instances must match", () => {
    const reasons = remoteMismatch([remote("local")], cell("local"), {
      ...planned,
      instances: 2,
      cpuLimit: 0.5,
      redisMaxmemoryMb: 8,
      apart: true,
    });
    expect(reasons?.split("; ")).toEqual([
      "2 instance(s) planned, 1 server URL(s) given",
      "a CPU limit of 0.5 cores is the lab's to set",
      "a Redis maxmemory is the lab's to set",
      "a server in a host of its own is a namespace the lab makes",
    ]);
  });

  test("the environment printed for a skipped cell starts a matching server", () => {
    expect(serverEnvironment("redis", { ...planned, pgPoolMax: 2 })).toBe(
      "CACHE_STRATEGY=redis PG_DRIVER=postgres-js REDIS_CLIENT=ioredis PG_POOL_MAX=2 PG_QUEUE_MAX=0 PG_ACQUIRE_TIMEOUT_MS=0 MAX_EVENT_LOOP_DELAY_MS=0 CACHE_TTL_MS=60000 L1_TTL_MS=5000 L1_MAX_ENTRIES=10000 EARLY_REFRESH_BETA=0",
    );
  });
});
