/**
 * two_tier: an in-process LRU (L1, quick-lru) in front of redis.ts's Redis path (L2), kept coherent across
 * instances by Redis pub/sub invalidation messages.
 *
 * Read path: L1 hit → value. An L1 miss starts or joins one flight per key here: L2 GET; a hit backfills L1;
 * a miss loads as redis.ts does (generation read, loader, generation-checked fill in the background) and
 * fills L1 for `l1TtlMs`. Invalidation: `delete(key)` drops L1, deletes in L2 as redis.ts does, then
 * PUBLISHes the key on `channel`: every other instance drops it from L1 and disowns its flight for it. L1 is
 * flushed whenever the subscription is (re-)established: a message may have been lost meanwhile.
 * Failure behaviour: as redis.ts (fail open, breaker, pending deletes); L1 keeps serving. A delete whose DEL
 * or PUBLISH failed is replayed whole.
 * Staleness bound: none in this instance. Others: until the message arrives (about a millisecond on one
 * host); `l1TtlMs` after a lost one; `ttlMs` + `l1TtlMs` while this instance cannot reach Redis.
 * Early refresh (`earlyRefresh`): as redis.ts, on L2's expiry, which L1 copies; a refresh takes a newer L2
 * entry, refreshed by another instance, without loading.
 *
 *   import { ioredisCommands } from "./redis_ioredis.ts"; // or bunCommands from "./redis_bun.ts"
 *   const redis = ioredisCommands("redis://127.0.0.1:6379");
 *   const cache = createCache({ redis, ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits: every instance drops it
 *
 * On a Redis Cluster: as redis.ts (its cluster adapters); the invalidations go by classic PUBLISH, which a
 * cluster sends to every node, so a subscriber on any master hears them all.
 *
 * Copying this file? Needs quick-lru@^7, and redis.ts with redis_ioredis.ts, redis_bun.ts or redis_node_cluster.ts beside it.
 * Why it works this way: docs/strategies.md.
 */
import QuickLRU from "quick-lru";
import {
  type Entry,
  type Loader,
  type RedisCacheOptions,
  type RedisCommands,
  type RedisEvent,
  redisTier,
} from "./redis.ts";

export { xfetchDue } from "./redis.ts";

/** redis.ts's commands and pub/sub, which both adapters carry. */
export interface PubSubCommands extends RedisCommands {
  publish(channel: string, message: string): Promise<number>;
  /** Subscribes a connection of its own to `channel`, again after every reconnect, until `end()`. */
  subscribe(
    channel: string,
    on: { message(text: string): void; subscribed(): void; failed(): void },
  ): { active(): boolean; end(): void };
}

/** What `onEvent` is told: redis.ts's events and the invalidation messages. */
export type TwoTierEvent = RedisEvent | "invalidationsPublished" | "invalidationsReceived";

export interface TwoTierCacheOptions extends RedisCacheOptions {
  redis: PubSubCommands;
  l1MaxSize: number;
  /** L1 time to live: also the staleness bound when an invalidation message is lost. */
  l1TtlMs: number;
  /** Pub/sub channel for invalidations (pub/sub ignores DB numbers: keep it prefixed). */
  channel?: string;
  onEvent?: (event: TwoTierEvent) => void;
}

/** One flight per key: whether it called the loader, and the L2 entry it backfilled L1 with, if any. */
interface Flight {
  promise: Promise<string | undefined>;
  loaded: boolean;
  l2Hit?: Entry;
}

export function createCache(options: TwoTierCacheOptions) {
  const { redis } = options;
  const emit = options.onEvent ?? (() => {});
  const channel = options.channel ?? `${options.prefix ?? "cache:"}invalidate`;
  const tier = redisTier(options, async (key) => {
    const reply = await tier.send(() => redis.publish(channel, `${tier.instanceId} ${key}`));
    if (reply !== undefined) emit("invalidationsPublished");
    return reply !== undefined;
  });
  const { inflight } = tier;
  const l1 = new QuickLRU<string, Entry>({ maxSize: options.l1MaxSize, maxAge: options.l1TtlMs });
  const counts = { l1Hits: 0, l1Misses: 0, l2Hits: 0, l2Misses: 0 };

  let subscriptions = 0;
  const subscription = redis.subscribe(channel, {
    subscribed: () => {
      // Messages sent while we were not subscribed are lost: start from an empty L1. After a gap, also
      // disown the loads in flight: one may hold a row whose message was lost, with a fill Redis did not
      // check. The first subscription keeps them: they began on a fresh instance, their fills are checked.
      l1.clear();
      if (++subscriptions > 1) inflight.clear();
    },
    failed: () => {
      tier.counts.errors++;
    },
    message: (message) => {
      const space = message.indexOf(" ");
      if (message.slice(0, space) === tier.instanceId) return;
      const key = message.slice(space + 1);
      emit("invalidationsReceived");
      inflight.delete(key);
      l1.delete(key);
    },
  });

  /** A miss's flight, or (with `stale`, the entry a hit found due) an early refresh's, which counts no tier. */
  function loadOnce(key: string, load: Loader, stale?: Entry): Flight {
    const shared = inflight.get(key) as Flight | undefined;
    if (shared) return shared;
    const flight: Flight = { promise: Promise.resolve(undefined), loaded: false };
    const owned = () => inflight.get(key) === flight;
    async function fill(): Promise<string | undefined> {
      const stored = await tier.get(key);
      const found = typeof stored === "string" ? tier.decode(stored) : undefined;
      let entry: Entry;
      // A refresh takes L2's entry only if another instance refreshed it already (a later expiry).
      if (found && (!stale || found.expiryMs > stale.expiryMs)) {
        if (!stale) counts.l2Hits++;
        entry = found;
      } else {
        if (!stale) counts.l2Misses++;
        flight.loaded = true;
        const loaded = await tier.load(key, load, {
          answered: stored !== undefined,
          refresh: stale !== undefined,
          owned,
          // The row was read before a delete somewhere: L1 drops it too (if it still holds this copy).
          refused: (copy) => {
            if (l1.peek(key) === copy) l1.delete(key);
          },
        });
        if (loaded === undefined) return undefined;
        entry = loaded;
      }
      // An invalidation during the flight disowns it: its value may predate the write.
      if (owned()) {
        l1.set(key, entry);
        if (entry === found && !stale) flight.l2Hit = entry;
      }
      return entry.value;
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
    async healthy(): Promise<boolean> {
      return (await tier.healthy()) && subscription.active();
    },
    async close(): Promise<void> {
      subscription.end();
      l1.clear();
      await tier.close();
    },
  };
}
