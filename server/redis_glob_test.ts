/** REDIS_KEY_PREFIX as a literal: a reset deletes its own keys and never another application's. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import { eventually, testDatabaseUrl, testRedis, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG } from "../server_config.ts";
import { escapeRedisGlob } from "./redis_glob.ts";

let redis: Redis;
let databaseUrl: string;
let redisUrl: string;

beforeAll(async () => {
  redisUrl = (await testServices()).redisUrl;
  databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
  redis = await testRedis();
});
afterAll(() => {
  redis.disconnect();
});

test("escapeRedisGlob escapes * ? [ ] and \\ and nothing else", () => {
  expect(escapeRedisGlob("app*?[a-z]\\:x")).toBe("app\\*\\?\\[a-z\\]\\\\:x");
  expect(escapeRedisGlob("cachelab:")).toBe("cachelab:");
});

for (const special of ["app*", "app?", "app[x]", "app\\"]) {
  test(`a reset with REDIS_KEY_PREFIX ${special} deletes only keys starting with the literal ${special}`, async () => {
    const base = uniquePrefix("glob");
    const prefix = `${base}${special}`;
    // Another application's keys on the same Redis, each matched by the prefix read as a glob.
    const others = [
      `${base}app-orders:1`,
      `${base}appx:2`,
      `${base}app:3`,
      `${base}app*`,
      `${base}app\\x`,
    ].filter((key) => !key.startsWith(prefix));
    await Promise.all(others.map((key) => redis.set(key, "theirs")));
    const lab = createServer({
      ...DEFAULT_CONFIG,
      strategy: "redis",
      databaseUrl,
      redisUrl,
      redisKeyPrefix: prefix,
    });
    try {
      expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
      await lab.app.handle(new Request("http://localhost/products/3"));
      const mine = await redis.keys(`${escapeRedisGlob(prefix)}*`);
      expect(mine).toContain(`${prefix}{product:3}`);
      expect(mine.every((key) => key.startsWith(prefix))).toBe(true);
      expect(await lab.reset()).toEqual({ redisKeysRemoved: mine.length });
      expect(await redis.keys(`${escapeRedisGlob(prefix)}*`)).toEqual([]);
      const survivors = await redis.mget(...others);
      expect(survivors).toEqual(others.map(() => "theirs"));
    } finally {
      await lab.close();
      await redis.del(...others);
    }
  });
}
