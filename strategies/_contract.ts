/**
 * The contract every strategy keeps (bentocache's driver suite), as a function: lab/strategies_test.ts runs it
 * against the strategies in this folder and against each file copied alone into an empty project, with real
 * Redis. `none` is the baseline: it keeps the parts of the contract that do not involve caching. It imports
 * nothing from the lab, so it travels with the strategies.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Redis } from "ioredis";
import type { CacheStrategy } from "./_strategy.ts";
import type * as localModule from "./local.ts";
import type * as noneModule from "./none.ts";
import type * as redisModule from "./redis.ts";
import type * as twoTierModule from "./two_tier.ts";

/** The four strategy modules under test: this folder's, or copies of them. */
export interface StrategyModules {
  none: typeof noneModule;
  local: typeof localModule;
  redis: typeof redisModule;
  two_tier: typeof twoTierModule;
}

/** A key prefix no other test (or run) shares. */
function uniquePrefix(name: string): string {
  return `cachelab-test:${name}:${crypto.randomUUID().slice(0, 8)}:`;
}

/** Polls `check` every few ms until it returns true or `timeoutMs` passes; returns whether it did. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(5);
  }
  return check();
}

/** Registers the contract's tests for `modules`, named with `label`; Redis at `redisUrl()`. */
export function strategyContract(
  label: string,
  modules: StrategyModules,
  redisUrl: () => Promise<string>,
): void {
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(await redisUrl(), {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 1_000,
    });
    await redis.connect();
  });
  afterAll(() => {
    redis.disconnect();
  });

  interface Subject {
    name: string;
    caches: boolean;
    usesRedis: boolean;
    create(options: { ttlMs: number; prefix: string; redis?: Redis | string }): CacheStrategy;
  }

  const subjects: Subject[] = [
    { name: "none", caches: false, usesRedis: false, create: () => modules.none.createCache() },
    {
      name: "local",
      caches: true,
      usesRedis: false,
      create: ({ ttlMs }) => modules.local.createCache({ maxSize: 1_000, ttlMs }),
    },
    {
      name: "redis",
      caches: true,
      usesRedis: true,
      create: ({ ttlMs, prefix, redis: client }) =>
        modules.redis.createCache({ redis: client ?? redis, ttlMs, prefix }),
    },
    {
      name: "two_tier",
      caches: true,
      usesRedis: true,
      create: ({ ttlMs, prefix, redis: client }) =>
        modules.two_tier.createCache({
          redis: client ?? redis,
          ttlMs,
          l1MaxSize: 1_000,
          l1TtlMs: ttlMs,
          prefix,
        }),
    },
  ];

  /** A loader that counts its calls and resolves after `delayMs` with a value naming the call. */
  function countingLoader(delayMs = 5) {
    const loader = {
      calls: 0,
      load: async (): Promise<string | undefined> => {
        loader.calls++;
        const call = loader.calls;
        await Bun.sleep(delayMs);
        return `value-${call}`;
      },
    };
    return loader;
  }

  for (const subject of subjects) {
    describe(`${label}: ${subject.name} strategy contract`, () => {
      const caches: CacheStrategy[] = [];
      function make(ttlMs = 60_000, client?: Redis | string): CacheStrategy {
        const cache = subject.create({ ttlMs, prefix: uniquePrefix(subject.name), redis: client });
        caches.push(cache);
        return cache;
      }
      afterAll(async () => {
        await Promise.all(caches.map((cache) => cache.close()));
      });

      test(`${subject.name} loads on the first call and ${subject.caches ? "not" : "again"} on the second`, async () => {
        const cache = make();
        const loader = countingLoader();
        expect(await cache.getOrLoad("k", loader.load)).toBe("value-1");
        const second = await cache.getOrLoad("k", loader.load);
        expect(loader.calls).toBe(subject.caches ? 1 : 2);
        expect(second).toBe(subject.caches ? "value-1" : "value-2");
      });

      test(`${subject.name} turns 20 concurrent misses into ${subject.caches ? "1 load" : "20 loads"}`, async () => {
        const cache = make();
        const loader = countingLoader(20);
        const values = await Promise.all(
          Array.from({ length: 20 }, () => cache.getOrLoad("hot", loader.load)),
        );
        expect(loader.calls).toBe(subject.caches ? 1 : 20);
        if (subject.caches) expect(new Set(values)).toEqual(new Set(["value-1"]));
      });

      test(`${subject.name} does not cache a failed load`, async () => {
        const cache = make();
        let calls = 0;
        const failing = async (): Promise<string | undefined> => {
          calls++;
          throw new Error("database down");
        };
        await expect(cache.getOrLoad("f", failing)).rejects.toThrow("database down");
        expect(await cache.getOrLoad("f", async () => "recovered")).toBe("recovered");
        expect(calls).toBe(1);
      });

      test(`${subject.name} does not cache an absent value`, async () => {
        const cache = make();
        let calls = 0;
        const absent = async (): Promise<string | undefined> => {
          calls++;
          return undefined;
        };
        expect(await cache.getOrLoad("missing", absent)).toBeUndefined();
        expect(await cache.getOrLoad("missing", absent)).toBeUndefined();
        expect(calls).toBe(2);
      });

      test(`${subject.name} reloads after delete`, async () => {
        const cache = make();
        const loader = countingLoader();
        await cache.getOrLoad("d", loader.load);
        await cache.delete("d");
        expect(await cache.getOrLoad("d", loader.load)).toBe("value-2");
        expect(loader.calls).toBe(2);
      });

      test(`${subject.name} does not keep a value whose load was in flight during delete`, async () => {
        const cache = make();
        const loader = countingLoader(30);
        const inFlight = cache.getOrLoad("race", loader.load);
        await Bun.sleep(5);
        await cache.delete("race"); // the write committed while the old row was being read
        expect(await inFlight).toBe("value-1");
        expect(await cache.getOrLoad("race", loader.load)).toBe("value-2");
      });

      test(`${subject.name} expires entries after ttlMs`, async () => {
        const cache = make(60);
        const loader = countingLoader(1);
        await cache.getOrLoad("t", loader.load);
        await cache.getOrLoad("t", loader.load);
        expect(loader.calls).toBe(subject.caches ? 1 : 2);
        await Bun.sleep(120);
        await cache.getOrLoad("t", loader.load);
        expect(loader.calls).toBe(subject.caches ? 2 : 3);
      });

      test(`${subject.name} counts hits, misses and loads`, async () => {
        const cache = make();
        const loader = countingLoader(1);
        await cache.getOrLoad("s", loader.load);
        await cache.getOrLoad("s", loader.load);
        const stats = cache.stats();
        expect(stats.loads).toBe(loader.calls);
        const tiers = Object.values(stats.tiers);
        if (subject.caches) {
          expect(tiers[0]).toEqual({ hits: 1, misses: 1 });
        } else {
          expect(tiers).toEqual([]);
        }
        expect(stats.errors).toBe(0);
      });

      test(`${subject.name} close leaves an injected client open`, async () => {
        const cache = make();
        await cache.getOrLoad("c", async () => "v");
        await cache.close();
        expect(await redis.ping()).toBe("PONG");
      });

      if (subject.usesRedis) {
        test(`${subject.name} answers from the loader within the command timeout when Redis is unreachable`, async () => {
          const cache = make(60_000, "redis://127.0.0.1:1");
          expect(await cache.healthy()).toBe(false);
          const loader = countingLoader(0);
          const startedMs = performance.now();
          expect(await cache.getOrLoad("down", loader.load)).toBe("value-1");
          await cache.delete("down");
          expect(await cache.getOrLoad("down", loader.load)).toBe("value-2");
          expect(performance.now() - startedMs).toBeLessThan(
            modules.redis.failFastRedisOptions.commandTimeout ?? 0,
          );
          expect(cache.stats().errors).toBeGreaterThan(0);
        });

        test(`${subject.name} shares entries between two instances through Redis`, async () => {
          const prefix = uniquePrefix(`${subject.name}-shared`);
          const a = subject.create({ ttlMs: 60_000, prefix });
          const b = subject.create({ ttlMs: 60_000, prefix });
          caches.push(a, b);
          const loader = countingLoader(1);
          await a.getOrLoad("shared", loader.load);
          expect(await b.getOrLoad("shared", loader.load)).toBe("value-1");
          expect(loader.calls).toBe(1);
        });
      }
    });
  }

  describe(`${label}: two_tier specifics`, () => {
    test("two_tier serves an L2 hit and backfills L1", async () => {
      const prefix = uniquePrefix("two_tier-backfill");
      const a = modules.two_tier.createCache({
        redis,
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      const b = modules.two_tier.createCache({
        redis,
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      try {
        // L1 is flushed when the subscription is established: start once both are subscribed.
        expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
        await a.getOrLoad("k", async () => "from-db");
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("from-db");
        expect(b.stats().tiers).toEqual({ l1: { hits: 0, misses: 1 }, l2: { hits: 1, misses: 0 } });
        await redis.del(`${prefix}k`); // only L1 can answer now
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("from-db");
        expect(b.stats().tiers.l1).toEqual({ hits: 1, misses: 1 });
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    test("two_tier drops another instance's L1 entry when a delete is published", async () => {
      const prefix = uniquePrefix("two_tier-pubsub");
      const a = modules.two_tier.createCache({
        redis,
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      const b = modules.two_tier.createCache({
        redis,
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      try {
        expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
        await a.getOrLoad("k", async () => "v1");
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("v1");
        await a.delete("k");
        expect(a.stats().invalidationsPublished).toBe(1);
        expect(await eventually(() => b.stats().invalidationsReceived === 1, 1_000)).toBe(true);
        expect(await b.getOrLoad("k", async () => "v2")).toBe("v2");
        expect(a.stats().invalidationsReceived).toBe(0); // its own message is ignored
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    test("two_tier flushes L1 when its subscriber reconnects (messages may have been lost)", async () => {
      const prefix = uniquePrefix("two_tier-resubscribe");
      const cache = modules.two_tier.createCache({
        redis,
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      try {
        expect(await eventually(() => cache.healthy())).toBe(true);
        await cache.getOrLoad("k", async () => "v1");
        await redis.del(`${prefix}k`);
        await redis.call("CLIENT", "KILL", "TYPE", "pubsub"); // drops every subscriber connection, ours included
        expect(
          await eventually(async () => (await cache.getOrLoad("k", async () => "v2")) === "v2", 3_000),
        ).toBe(true);
      } finally {
        await cache.close();
      }
    });
  });
}
