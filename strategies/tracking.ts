/**
 * tracking: an in-process LRU (L1, quick-lru) in front of redis.ts's Redis path (L2), kept coherent by Redis
 * itself: the connection has CLIENT TRACKING on, so Redis remembers every key it read and sends an
 * invalidation for it once the key changes, whoever changed it (to a second connection on ioredis,
 * redis_ioredis_tracking.ts; as a RESP3 push on node-redis's one, redis_node.ts).
 *
 * Read path: L1 hit → value. An L1 miss starts or joins one flight per key: L2 GET (Redis now tracks the key
 * here); a hit fills L1 for `l1TtlMs`. A miss loads as redis.ts does (generation read, loader,
 * generation-checked fill in the background) and leaves L1 empty: the fill is a write, which Redis answers
 * with an invalidation and by tracking the key here no more, so the key reaches L1 on its next read.
 * Invalidation: `delete(key)` drops L1 and deletes in L2 as redis.ts does; Redis pushes it to every instance
 * that read the key. A push drops the key from L1. One heard before a flight's GET is answered keeps a hit
 * out of L1 (the reply may predate the write) but lets a miss load and fill (the push is most often the
 * expiry that GET set off); one heard during the load disowns the flight. A push of everything (a flush, or
 * the adapter's word that the connection was lost) drops all.
 * Failure behaviour: as redis.ts (fail open, breaker, pending deletes). On a disconnect, a reconnect or a
 * failed command everything in L1 is dropped, and only a reply on a tracked connection fills it again: while
 * Redis cannot be reached every read loads.
 * Staleness bound: none in this instance. Others: the push's delay (about a millisecond on one host); while
 * Redis hangs, until the adapter's heartbeat times out (`heartbeatMs` + its command timeout); `l1TtlMs` past
 * a server-side expiry, which Redis does not push on time.
 * Early refresh (`earlyRefresh`): as redis.ts, on L2's expiry, which L1 copies.
 *
 *   import { ioredisTrackingCommands } from "./redis_ioredis_tracking.ts"; // or redis_node.ts's nodeRedisCommands
 *   const redis = ioredisTrackingCommands("redis://127.0.0.1:6379");
 *   const cache = createCache({ redis, ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits: Redis tells every instance that read it
 *
 * Copying this file? Needs quick-lru@^7, redis.ts, and redis_ioredis_tracking.ts or redis_node.ts beside it.
 * Why it works this way: docs/strategies.md.
 */
import QuickLRU from "quick-lru";
import {
  cacheKeyOf,
  type Entry,
  type Loader,
  type RedisCacheOptions,
  type RedisCommands,
  type RedisEvent,
  redisTier,
} from "./redis.ts";

export { xfetchDue } from "./redis.ts";

/** redis.ts's commands on a tracked connection, and the invalidations Redis sends (an adapter carries both). */
export interface TrackingCommands extends RedisCommands {
  /** Calls `invalidate` with each key Redis pushes, and with null when everything local must go. */
  track(invalidate: (key: string | null) => void): { end(): void };
}

/** What `onEvent` is told: redis.ts's events and the invalidations Redis pushed. */
export type TrackingEvent = RedisEvent | "invalidationsReceived";

export interface TrackingCacheOptions extends RedisCacheOptions {
  redis: TrackingCommands;
  l1MaxSize: number;
  /** L1 time to live: the bound past an expiry in Redis, which is pushed only once Redis notices it. */
  l1TtlMs: number;
  onEvent?: (event: TrackingEvent) => void;
}

/** One flight per key: whether it called the loader, and the L2 entry it found, if any. */
interface Flight {
  promise: Promise<string | undefined>;
  loaded: boolean;
  l2Hit?: Entry;
  /** Its GET is unanswered; `pushed`: a push for the key came meanwhile. */
  asking: boolean;
  pushed?: boolean;
}

export function createCache(options: TrackingCacheOptions) {
  const { redis } = options;
  const emit = options.onEvent ?? (() => {});
  const prefix = options.prefix ?? "cache:";
  const tier = redisTier(options);
  const { inflight } = tier;
  const l1 = new QuickLRU<string, Entry>({ maxSize: options.l1MaxSize, maxAge: options.l1TtlMs });
  const counts = { l1Hits: 0, l1Misses: 0, l2Hits: 0, l2Misses: 0 };

  const tracked = redis.track((key) => {
    if (key === null) {
      l1.clear();
      inflight.clear(); // a reply read before the loss may predate a push that never came
      return;
    }
    // Another cache's key on a shared connection, or a generation key (`prefix{key}:gen`): not ours.
    const own = cacheKeyOf(prefix, key);
    if (own === null) return;
    emit("invalidationsReceived");
    l1.delete(own);
    const flight = inflight.get(own) as Flight | undefined;
    // Before its GET's reply the push may be for a change the GET saw (an expiry the GET itself set off):
    // the reply decides. During its load, the flight is disowned: the load may predate the write.
    if (flight?.asking) flight.pushed = true;
    else inflight.delete(own);
  });

  /** A miss's flight, or (with `stale`, the entry a hit found due) an early refresh's, which counts no tier. */
  function loadOnce(key: string, load: Loader, stale?: Entry): Flight {
    const shared = inflight.get(key) as Flight | undefined;
    if (shared) return shared;
    const flight: Flight = { promise: Promise.resolve(undefined), loaded: false, asking: true };
    const owned = () => inflight.get(key) === flight;
    async function fill(): Promise<string | undefined> {
      const stored = await tier.get(key);
      flight.asking = false;
      const found = typeof stored === "string" ? tier.decode(stored) : undefined;
      // A refresh takes L2's entry only if another instance refreshed it already (a later expiry).
      if (found && (!stale || found.expiryMs > stale.expiryMs)) {
        if (!stale) {
          counts.l2Hits++;
          flight.l2Hit = found;
        }
        // A hit with a push beside it may predate the write; a miss still loads (the generation guards its fill).
        if (owned() && !flight.pushed) l1.set(key, found);
        return found.value;
      }
      if (!stale) counts.l2Misses++;
      flight.loaded = true;
      const loaded = await tier.load(key, load, {
        answered: stored !== undefined,
        refresh: stale !== undefined,
        owned,
      });
      return loaded?.value;
    }
    flight.promise = fill().finally(() => {
      if (owned()) inflight.delete(key);
    });
    inflight.set(key, flight);
    return flight;
  }

  /** XFetch on a hit: starts one background refresh unless a flight for the key is on its way already. */
  function refreshIfDue(key: string, entry: Entry, load: Loader): void {
    if (!tier.due(entry) || inflight.has(key)) return;
    emit("earlyRefreshes");
    loadOnce(key, load, entry).promise.catch(() => emit("refreshFailures"));
  }

  async function fromL2(key: string, load: Loader): Promise<string | undefined> {
    counts.l1Misses++;
    tier.replay(); // its DELs go out before this flight's GET
    const flight = loadOnce(key, load);
    try {
      return await flight.promise;
    } finally {
      if (flight.loaded) emit("loadWaits");
      // Decided once the flight has left the map, so that a due refresh is not taken for one on its way.
      else if (flight.l2Hit) refreshIfDue(key, flight.l2Hit, load);
    }
  }

  return {
    /** An L1 hit is the string itself, not a promise (`await` takes either): it costs no microtask. */
    getOrLoad(key: string, load: Loader): string | Promise<string | undefined> {
      const cached = l1.get(key);
      if (cached === undefined) return fromL2(key, load);
      counts.l1Hits++;
      refreshIfDue(key, cached, load);
      return cached.value;
    },
    async delete(key: string): Promise<void> {
      l1.delete(key);
      await tier.delete(key);
    },
    stats() {
      const { loads, errors } = tier.counts;
      const l1Tier = { hits: counts.l1Hits, misses: counts.l1Misses };
      const tiers = { l1: l1Tier, l2: { hits: counts.l2Hits, misses: counts.l2Misses } };
      return { tiers, loads, errors, invalidationsPending: tier.pending.size };
    },
    healthy: (): Promise<boolean> => tier.healthy(),
    async close(): Promise<void> {
      tracked.end();
      l1.clear();
      await tier.close();
    },
  };
}
