import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { Redis } from "ioredis";
import { freePort, portAnswers } from "../shared/ports.ts";
import { limitRedisMemory, redisEvictions } from "./constraints.ts";

// A redis-server of this test's own: CONFIG SET maxmemory on the lab's shared Redis would evict the keys of
// every other test and run using it at the same time.
let server: Subprocess;
let redis: Redis;

beforeAll(async () => {
  const binary = Bun.which("redis-server");
  if (binary === null) throw new Error("Cannot test Redis constraints: redis-server is not installed");
  const port = await freePort();
  server = Bun.spawn(
    [binary, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdout: "ignore", stderr: "inherit" },
  );
  for (let attempt = 0; !(await portAnswers(port)); attempt++) {
    if (attempt >= 250)
      throw new Error(`Cannot test Redis constraints: redis-server on ${port} never answered`);
    await Bun.sleep(20);
  }
  redis = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 2_000 });
  await redis.connect();
});

afterAll(async () => {
  redis?.disconnect();
  server?.kill("SIGKILL");
  await server?.exited;
});

async function configGet(parameter: string): Promise<string> {
  return ((await redis.config("GET", parameter)) as string[])[1] as string;
}

describe("Redis constraints", () => {
  test("limitRedisMemory sets maxmemory and the policy, and restore puts the previous values back", async () => {
    await redis.config("SET", "maxmemory", "0");
    await redis.config("SET", "maxmemory-policy", "noeviction");
    const limit = await limitRedisMemory(redis, 64 * 1_048_576, { policy: "allkeys-lfu" });
    expect(limit.previous).toEqual({ maxmemoryBytes: 0, policy: "noeviction" });
    expect(await configGet("maxmemory")).toBe(String(64 * 1_048_576));
    expect(await configGet("maxmemory-policy")).toBe("allkeys-lfu");
    expect(limit.describe()).toBe("maxmemory 64.0 MiB (67108864 bytes), allkeys-lfu");
    await limit.restore();
    await limit.restore(); // idempotent
    expect(await configGet("maxmemory")).toBe("0");
    expect(await configGet("maxmemory-policy")).toBe("noeviction");
  });

  test("with a 2 MiB maxmemory and allkeys-lru, writing more than that evicts keys", async () => {
    const before = await redisEvictions(redis);
    const limit = await limitRedisMemory(redis, 2 * 1_048_576);
    expect(limit.policy).toBe("allkeys-lru");
    const value = "x".repeat(10_000);
    const keys = 400; // 4 MB of values
    try {
      for (let batch = 0; batch < keys; batch += 50) {
        const pipeline = redis.pipeline();
        for (let index = batch; index < batch + 50; index++) pipeline.set(`constraints-test:${index}`, value);
        const replies = (await pipeline.exec()) ?? [];
        for (const [error] of replies) expect(error).toBeNull(); // allkeys-lru evicts; it never refuses a write
      }
      const evicted = (await redisEvictions(redis)) - before;
      console.error(`[constraints_test] evicted ${evicted} of ${keys} keys; ${await redis.dbsize()} remain`);
      expect(evicted).toBeGreaterThan(0);
      expect(await redis.dbsize()).toBeLessThan(keys);
    } finally {
      await limit.restore();
      await redis.flushdb();
    }
    expect(await configGet("maxmemory")).toBe("0");
  });

  test("limitRedisMemory refuses 0 bytes (unlimited to Redis) and an unknown policy, and changes nothing", async () => {
    await expect(limitRedisMemory(redis, 0)).rejects.toThrow(RangeError);
    await expect(limitRedisMemory(redis, 1.5)).rejects.toThrow(RangeError);
    // @ts-expect-error: a policy Redis does not have
    await expect(limitRedisMemory(redis, 1_048_576, { policy: "lru" })).rejects.toThrow(TypeError);
    expect(await configGet("maxmemory")).toBe("0");
  });

  test("redisEvictions reads evicted_keys from INFO stats", async () => {
    const info = await redis.info("stats");
    expect(await redisEvictions(redis)).toBe(Number(/^evicted_keys:(\d+)/m.exec(info)?.[1]));
  });
});
