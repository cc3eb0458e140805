import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import { ownRedisServer } from "../shared/testing.ts";
import { redisFootprint } from "./redis_footprint.ts";
import { REDIS_PREFIX } from "./reset.ts";

// A redis-server of this test's own, so that its key count is exactly what the test wrote.
let own: Awaited<ReturnType<typeof ownRedisServer>>;
let redis: Redis;

beforeAll(async () => {
  own = await ownRedisServer("the Redis footprint");
  redis = own.redis;
});

afterAll(() => own?.stop());

async function usedMemory(): Promise<number> {
  return Number(/^used_memory:(\d+)\r?$/m.exec(await redis.info("memory"))?.[1]);
}

describe("redisFootprint", () => {
  test("no entry: 0 entries and no bytes per entry, not a zero", async () => {
    await redis.flushall();
    await redis.set("someone-else:1", "x".repeat(400));
    expect(await redisFootprint(redis)).toEqual({ entries: 0, bytesPerEntry: null, trackingItems: 0 });
  });

  test("counts Redis's tracking table: each key once per connection that read it with tracking on", async () => {
    await redis.flushall();
    await redis.set(`${REDIS_PREFIX}{product:1}`, "a");
    await redis.set(`${REDIS_PREFIX}{product:2}`, "b");
    const readers = [redis.duplicate(), redis.duplicate()];
    try {
      for (const reader of readers) await reader.call("CLIENT", "TRACKING", "ON"); // RESP3: ioredis 6's default
      await (readers[0] as Redis).get(`${REDIS_PREFIX}{product:1}`);
      await (readers[0] as Redis).get(`${REDIS_PREFIX}{product:2}`);
      await (readers[1] as Redis).get(`${REDIS_PREFIX}{product:1}`);
      expect((await redisFootprint(redis)).trackingItems).toBe(3);
      await redis.set(`${REDIS_PREFIX}{product:1}`, "changed"); // invalidated: no longer tracked by either
      expect((await redisFootprint(redis)).trackingItems).toBe(1);
    } finally {
      for (const reader of readers) reader.disconnect();
    }
  });

  test("counts only the lab's keys, and its bytes per entry agree with Redis's used_memory growth", async () => {
    await redis.flushall();
    const before = await usedMemory();
    const pipeline = redis.pipeline();
    for (let id = 0; id < 5_000; id++)
      pipeline.set(`${REDIS_PREFIX}{product:${id}}`, "x".repeat(400), "PX", 60_000);
    pipeline.set("someone-else:1", "x".repeat(4_000));
    await pipeline.exec();
    const grown = (await usedMemory()) - before;
    const footprint = await redisFootprint(redis);
    expect(footprint.entries).toBe(5_000);
    // A 400-byte value and a ~25-byte key cannot take less than 425 bytes.
    expect(footprint.bytesPerEntry).toBeGreaterThan(425);
    // The independent check: Redis's own growth over the 5 000 keys (plus one of 4 KB) per key.
    const perKey = grown / 5_000;
    expect(footprint.bytesPerEntry as number).toBeGreaterThan(perKey * 0.7);
    expect(footprint.bytesPerEntry as number).toBeLessThan(perKey * 1.3);
  });
});
