/**
 * two_tier: an in-process LRU (L1, quick-lru) in front of Redis (L2, ioredis), kept coherent across
 * instances by Redis pub/sub invalidation messages.
 *
 * Read path: L1 hit → value. L1 miss → one flight per key in this process: L2 GET; an L2 hit backfills L1;
 * an L2 miss runs the loader, SETs L2 (`PX ttlMs`) and fills L1 (`l1TtlMs`). Invalidation: `delete(key)`
 * drops L1 and disowns a flight in progress here, DELs L2, then PUBLISHes the key on `channel`; every other
 * instance drops it from its L1 when the message arrives (about a millisecond on one host).
 * Trade-offs: L1 hits cost no network; L1 holds between `l1MaxSize` and 2 × `l1MaxSize` entries (quick-lru
 * generations). Pub/sub is at-most-once: a message lost while a subscriber reconnects would leave that
 * instance's L1 stale, so L1 is flushed whenever the subscription is (re-)established; while Redis is down
 * there is no bus at all and other instances' L1 entries stay stale for at most `l1TtlMs`, the staleness
 * bound. This instance never serves a value older than its own last delete().
 * Failure behaviour: fail open, as in redis.ts: an L2 error is an L2 miss, the loader answers, the error is
 * counted; a failed DEL/PUBLISH is counted and bounded by the TTLs. Serialization: values are strings the
 * caller serializes; L1 stores them by reference.
 *
 * Copying this file? Needs ioredis@^6 and quick-lru@^7.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits: every instance drops it
 */
import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import QuickLRU from "quick-lru";

export interface TwoTierCacheOptions {
  /** A client to use (left open by close()), or a URL to create one with the fail-fast settings. */
  redis: Redis | string;
  /** L2 (Redis) time to live. */
  ttlMs: number;
  l1MaxSize: number;
  /** L1 time to live: also the staleness bound when an invalidation message is lost. */
  l1TtlMs: number;
  prefix?: string;
  /** Pub/sub channel for invalidations (pub/sub ignores DB numbers: keep it prefixed). */
  channel?: string;
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

export function createCache(options: TwoTierCacheOptions) {
  const owned = typeof options.redis === "string";
  const redis =
    typeof options.redis === "string" ? new Redis(options.redis, failFastRedisOptions) : options.redis;
  if (owned) {
    redis.on("error", () => {});
    redis.connect().catch(() => {});
  }
  const prefix = options.prefix ?? "cache:";
  const channel = options.channel ?? `${prefix}invalidate`;
  const instanceId = randomUUID();
  const l1 = new QuickLRU<string, string>({ maxSize: options.l1MaxSize, maxAge: options.l1TtlMs });
  const inflight = new Map<string, Promise<string | undefined>>();
  const counts = {
    l1Hits: 0,
    l1Misses: 0,
    l2Hits: 0,
    l2Misses: 0,
    loads: 0,
    errors: 0,
    published: 0,
    received: 0,
  };

  // The subscriber queues its SUBSCRIBE until connected and never gives up reconnecting.
  const subscriber = redis.duplicate({
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResubscribe: false,
  });
  let subscribed = false;
  subscriber.on("error", () => {});
  subscriber.on("ready", () => {
    subscriber.subscribe(channel).then(
      () => {
        l1.clear(); // messages sent while we were not subscribed are lost: start from an empty L1
        subscribed = true;
      },
      () => {
        counts.errors++;
      },
    );
  });
  subscriber.on("close", () => {
    subscribed = false;
  });
  subscriber.on("message", (_channel: string, message: string) => {
    const space = message.indexOf(" ");
    if (message.slice(0, space) === instanceId) return;
    const key = message.slice(space + 1);
    counts.received++;
    inflight.delete(key);
    l1.delete(key);
  });

  function loadOnce(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
    const pending = inflight.get(key);
    if (pending) return pending;
    async function fill(): Promise<string | undefined> {
      let value: string | undefined;
      try {
        value = (await redis.get(prefix + key)) ?? undefined;
      } catch {
        counts.errors++;
      }
      if (value !== undefined) {
        counts.l2Hits++;
      } else {
        counts.l2Misses++;
        counts.loads++;
        value = await load();
        if (value !== undefined && inflight.get(key) === flight) {
          await redis.set(prefix + key, value, "PX", options.ttlMs).catch(() => {
            counts.errors++;
          });
        }
      }
      // An invalidation during the flight disowns it: its value may predate the write.
      if (value !== undefined && inflight.get(key) === flight) l1.set(key, value);
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
      const cached = l1.get(key);
      if (cached !== undefined) {
        counts.l1Hits++;
        return cached;
      }
      counts.l1Misses++;
      return loadOnce(key, load);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      l1.delete(key);
      await redis.del(prefix + key).catch(() => {
        counts.errors++;
      });
      await redis.publish(channel, `${instanceId} ${key}`).then(
        () => {
          counts.published++;
        },
        () => {
          counts.errors++;
        },
      );
    },
    stats() {
      return {
        tiers: {
          l1: { hits: counts.l1Hits, misses: counts.l1Misses },
          l2: { hits: counts.l2Hits, misses: counts.l2Misses },
        },
        loads: counts.loads,
        errors: counts.errors,
        invalidationsPublished: counts.published,
        invalidationsReceived: counts.received,
      };
    },
    async healthy(): Promise<boolean> {
      const pong = await redis.ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
      return pong && subscribed;
    },
    async close(): Promise<void> {
      subscriber.disconnect();
      l1.clear();
      inflight.clear();
      if (owned) redis.disconnect();
    },
  };
}
