/**
 * Joins counted apart (server/tier_timer.ts): a request that waited on a load another request of its key
 * started is a `join`, not a miss (local) nor a Redis hit (redis, two_tier, tracking). In process, on the
 * strategies themselves and the real Redis, with a load held open until both requests wait on it: a state,
 * not a race.
 */
import { afterAll, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import { eventually, testRedis, uniquePrefix } from "../lab/shared/testing.ts";
import { counted, countedLocal } from "../strategies/_counted.ts";
import type { CacheStrategy } from "../strategies/_strategy.ts";
import * as local from "../strategies/local.ts";
import * as redisStrategy from "../strategies/redis.ts";
import { ioredisCommands } from "../strategies/redis_ioredis.ts";
import * as twoTier from "../strategies/two_tier.ts";
import { createTierTimer } from "./tier_timer.ts";

const opened: CacheStrategy[] = [];
let client: Redis | undefined;
afterAll(async () => {
  await Promise.all(opened.map((cache) => cache.close()));
  client?.disconnect();
});

/**
 * Two requests for one key whose load is held open until `bothWait` (given the loads started so far) says both
 * wait on it; then it answers. Returns the timer and the handler, for more requests.
 */
async function twoOnOneLoad(
  strategy: "local" | "redis" | "two_tier",
  cache: CacheStrategy,
  bothWait: (loads: number) => boolean,
) {
  const timer = createTierTimer({ tierTiming: 1, strategy });
  const held = Promise.withResolvers<string | undefined>();
  let loads = 0;
  const handler = timer.timed("/products/:id", (_context: null, lookups) =>
    Promise.resolve(
      timer.lookup(cache, lookups, "product:1", () => {
        loads++;
        return held.promise;
      }),
    ).then((body) => new Response(body ?? "", { status: body === undefined ? 404 : 200 })),
  );
  const answers = [handler(null), handler(null)];
  expect(await eventually(() => bothWait(loads))).toBe(true);
  held.resolve('{"id":1}');
  expect(await Promise.all(answers.map(async (answer) => (await answer).status))).toEqual([200, 200]);
  expect(loads).toBe(1);
  return { timer, handler };
}

test("local: the request that started the load is a miss, the one that waited on it a join", async () => {
  const cache = countedLocal((onEvent) => local.createCache({ maxSize: 10, ttlMs: 60_000, onEvent }));
  opened.push(cache);
  // Both asked in the same tick: the second found the first's load in flight.
  const { timer, handler } = await twoOnOneLoad("local", cache, (loads) => loads === 1);
  expect(timer.snapshot().requestCounts).toMatchObject({ l1_hit: 0, miss: 1, join: 1 });
  expect((await handler(null)).status).toBe(200);
  expect(timer.snapshot().requestCounts).toMatchObject({ l1_hit: 1, miss: 1, join: 1 });
});

test("redis: a join is not a Redis hit, and a Redis hit after the load's fill is not a join", async () => {
  client = await testRedis(); // connected: a command sent while connecting fails fast, and the cache fails open
  const prefix = uniquePrefix("joins");
  const redis = ioredisCommands(client);
  const cache = counted((onEvent) => redisStrategy.createCache({ redis, prefix, ttlMs: 60_000, onEvent }));
  opened.push(cache);
  // Each sends its own GET: both missed once each has started or joined the load.
  const { timer, handler } = await twoOnOneLoad(
    "redis",
    cache,
    (loads) => loads === 1 && cache.stats().loadWaits === 2,
  );
  expect(timer.snapshot().requestCounts).toMatchObject({ l2_hit: 0, miss: 1, join: 1 });
  const filled = client;
  expect(await eventually(async () => (await filled.get(`${prefix}{product:1}`)) !== null)).toBe(true);
  expect((await handler(null)).status).toBe(200);
  expect(timer.snapshot().requestCounts).toMatchObject({ l2_hit: 1, miss: 1, join: 1 });
});

test("two_tier: a request that waited on another's flight that loaded is a join", async () => {
  client ??= await testRedis();
  const redis = ioredisCommands(client);
  const prefix = uniquePrefix("joins");
  const cache = counted((onEvent) =>
    twoTier.createCache({ redis, prefix, ttlMs: 60_000, l1MaxSize: 10, l1TtlMs: 60_000, onEvent }),
  );
  opened.push(cache);
  // One flight per key in process: the second request took the first's flight in the same tick.
  const { timer } = await twoOnOneLoad("two_tier", cache, (loads) => loads === 1);
  expect(timer.snapshot().requestCounts).toMatchObject({ l1_hit: 0, l2_hit: 0, miss: 1, join: 1 });
});
