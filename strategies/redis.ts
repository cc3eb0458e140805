/**
 * redis: cache-aside in Redis (ioredis), shared by every instance of the service.
 *
 * Read path: GET prefix+key → hit; miss → loader, then `SET key value PX ttlMs`. Concurrent misses for one
 * key in this process share one load (in-flight promise map; failures are not cached). Invalidation:
 * `delete(key)` DELs the key and disowns a load in flight here, so this instance never re-sets a value read
 * before the write. Another instance's load that read the old row before the write can still SET it after
 * the DEL (a stale set); that entry lives until `ttlMs`, the staleness bound across instances.
 * Trade-offs: one network round trip per hit and JSON already serialized by the caller; memory lives in
 * Redis, not in the process.
 * Failure behaviour: fail open. Every Redis error (down, timeout, refused) is a miss: the request is answered
 * by the loader and the error is counted in `stats().errors`. With the fail-fast client settings below a dead
 * Redis costs at most `commandTimeout` per call instead of ioredis' default queueing (10–73 s stalls). A
 * failed DEL leaves the old value until `ttlMs`. Serialization: values are strings the caller serializes.
 *
 * Copying this file? Needs ioredis@^6.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, prefix: "shop:" });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 */
import { Redis, type RedisOptions } from "ioredis";

export interface RedisCacheOptions {
  /** A client to use (left open by close()), or a URL to create one with the fail-fast settings. */
  redis: Redis | string;
  ttlMs: number;
  prefix?: string;
}

/** Cache settings: errors become misses quickly instead of waiting in ioredis' offline queue. */
export const failFastRedisOptions: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 100,
  connectTimeout: 1_000,
  socketTimeout: 5_000,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  lazyConnect: true,
};

export function createCache(options: RedisCacheOptions) {
  const owned = typeof options.redis === "string";
  const redis =
    typeof options.redis === "string" ? new Redis(options.redis, failFastRedisOptions) : options.redis;
  if (owned) {
    redis.on("error", () => {}); // connection errors surface as rejected commands, counted below
    redis.connect().catch(() => {});
  }
  const prefix = options.prefix ?? "cache:";
  const inflight = new Map<string, Promise<string | undefined>>();
  let hits = 0;
  let misses = 0;
  let loads = 0;
  let errors = 0;

  function loadOnce(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
    const pending = inflight.get(key);
    if (pending) return pending;
    async function fill(): Promise<string | undefined> {
      loads++;
      const value = await load();
      if (value !== undefined && inflight.get(key) === flight) {
        await redis.set(prefix + key, value, "PX", options.ttlMs).catch(() => {
          errors++;
        });
      }
      return value;
    }
    // `flight` is read inside fill() only after its first await, when it is assigned.
    const flight = fill().finally(() => {
      if (inflight.get(key) === flight) inflight.delete(key);
    });
    inflight.set(key, flight);
    return flight;
  }

  return {
    async getOrLoad(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
      let cached: string | null = null;
      try {
        cached = await redis.get(prefix + key);
      } catch {
        errors++;
      }
      if (cached !== null) {
        hits++;
        return cached;
      }
      misses++;
      return loadOnce(key, load);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      await redis.del(prefix + key).catch(() => {
        errors++;
      });
    },
    stats() {
      return {
        tiers: { redis: { hits, misses } },
        loads,
        errors,
        invalidationsPublished: 0,
        invalidationsReceived: 0,
      };
    },
    async healthy(): Promise<boolean> {
      return redis.ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
    },
    async close(): Promise<void> {
      inflight.clear();
      if (owned) redis.disconnect();
    },
  };
}
