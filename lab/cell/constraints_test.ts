import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { processStartTicks } from "../shared/owner_record.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { ownRedisServer } from "../shared/testing.ts";
import { limitRedisMemory, redisEvictions, restoreLeftRedisLimit } from "./constraints.ts";

// A redis-server of this test's own: CONFIG SET maxmemory on the lab's shared Redis would evict the keys of
// every other test and run using it at the same time.
let own: Awaited<ReturnType<typeof ownRedisServer>>;
let redis: Redis;

beforeAll(async () => {
  own = await ownRedisServer("Redis constraints");
  redis = own.redis;
});

afterAll(() => own?.stop());

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

describe("a limit a killed run left behind", () => {
  const recordPath = () => join(mkdtempSync(join(testTmpdir(), "cachelab-limit-")), "redis-maxmemory.json");
  async function runId(): Promise<string> {
    return /^run_id:(\w+)/m.exec(await redis.info("server"))?.[1] as string;
  }
  /** The owner of a process that has exited: its pid and start time, as a killed run's record holds. */
  async function goneOwner(): Promise<{ pid: number; startTicks: number | null }> {
    const proc = Bun.spawn(["sleep", "5"]);
    const owner = { pid: proc.pid, startTicks: processStartTicks(proc.pid) };
    proc.kill("SIGKILL");
    await proc.exited;
    return owner;
  }

  test("limitRedisMemory records what it replaced before setting, and restore removes the record", async () => {
    const path = recordPath();
    await redis.config("SET", "maxmemory", "0");
    const limit = await limitRedisMemory(redis, 32 * 1_048_576, { recordPath: path });
    const record = JSON.parse(readFileSync(path, "utf8"));
    expect(record).toMatchObject({
      redisRunId: await runId(),
      owner: { pid: process.pid },
      previous: { maxmemoryBytes: 0 },
    });
    await limit.restore();
    expect(existsSync(path)).toBe(false);
    expect(await configGet("maxmemory")).toBe("0");
  });

  test("the next run puts back the values a dead run recorded, on the same Redis", async () => {
    const path = recordPath();
    await redis.config("SET", "maxmemory", String(8 * 1_048_576)); // the killed run's cell limit, still in force
    await redis.config("SET", "maxmemory-policy", "allkeys-lru");
    const previous = { maxmemoryBytes: 0, policy: "noeviction" };
    writeFileSync(path, JSON.stringify({ redisRunId: await runId(), owner: await goneOwner(), previous }));
    expect(await restoreLeftRedisLimit(redis, path)).toStartWith("restored Redis maxmemory 0 (noeviction)");
    expect(await configGet("maxmemory")).toBe("0");
    expect(await configGet("maxmemory-policy")).toBe("noeviction");
    expect(existsSync(path)).toBe(false);
    expect(await restoreLeftRedisLimit(redis, path)).toBeNull();
  });

  test("a record for another Redis process changes nothing, and a live run's record refuses", async () => {
    const path = recordPath();
    await redis.config("SET", "maxmemory", String(4 * 1_048_576));
    const previous = { maxmemoryBytes: 0, policy: "noeviction" };
    writeFileSync(path, JSON.stringify({ redisRunId: "0".repeat(40), owner: await goneOwner(), previous }));
    expect(await restoreLeftRedisLimit(redis, path)).toContain("since restarted");
    expect(await configGet("maxmemory")).toBe(String(4 * 1_048_576));
    const sleeper = Bun.spawn(["sleep", "30"]);
    try {
      const owner = { pid: sleeper.pid, startTicks: processStartTicks(sleeper.pid) };
      writeFileSync(path, JSON.stringify({ redisRunId: await runId(), owner, previous }));
      await expect(restoreLeftRedisLimit(redis, path)).rejects.toThrow("is still running");
      await expect(limitRedisMemory(redis, 1_048_576, { recordPath: path })).rejects.toThrow("not put back");
      expect(await configGet("maxmemory")).toBe(String(4 * 1_048_576));
    } finally {
      sleeper.kill("SIGKILL");
      await redis.config("SET", "maxmemory", "0");
    }
  });
});

test("constrained refuses a Redis cachelab did not start: its keys and maxmemory stay as they were", async () => {
  // This file's redis-server stands for a developer's own: 3 000 keys of 8 KB, no limit.
  const value = "v".repeat(8_192);
  for (let batch = 0; batch < 3_000; batch += 500) {
    const pipeline = redis.pipeline();
    for (let index = batch; index < batch + 500; index++) pipeline.set(`users-app:${index}`, value);
    await pipeline.exec();
  }
  await redis.config("SET", "maxmemory", "0");
  const keysBefore = await redis.dbsize();
  const port = redis.options.port as number;
  const proc = Bun.spawn(
    ["bun", "lab/cli/experiment.ts", "constrained", "--out", "/tmp/cachelab-refused.csv"],
    {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${port}` },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const stderr = await new Response(proc.stderr).text();
  expect(await proc.exited).toBe(2);
  expect(stderr).toContain(
    `constrained sets maxmemory on Redis, and the Redis at redis://127.0.0.1:${port} was not started by cachelab`,
  );
  expect(await redis.dbsize()).toBe(keysBefore);
  expect(await configGet("maxmemory")).toBe("0");
  await redis.flushdb();
}, 60_000);
