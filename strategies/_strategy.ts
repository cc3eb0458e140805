/**
 * The shape every strategy satisfies. Strategy files never import this (each is copyable on its own);
 * server/strategy.ts and the contract suite check conformance (`satisfies`, or through _counted.ts).
 */

/** Loads the value for a key; `undefined` means "absent", which is never cached. */
export type Loader = () => Promise<string | undefined>;

export interface CacheStats {
  /** Per tier, in lookup order: `local`, `redis`, or `l1` then `l2`. Empty for `none`. */
  tiers: Record<string, { hits: number; misses: number }>;
  /** Loader calls: what reached the database through this cache. */
  loads: number;
  /** Redis failures that were swallowed (read as a miss, write or invalidation skipped). */
  errors: number;
  invalidationsPublished: number;
  invalidationsReceived: number;
  /** Times the Redis circuit breaker opened (strategies with Redis only, as the fields below). */
  breakerOpens?: number;
  /** Times the breaker closed again (its probe answered). */
  breakerCloses?: number;
  /** Whether the breaker is open or probing now (it opened more recently than it closed). */
  breakerOpen?: boolean;
  /** Redis commands not sent because the breaker was open. */
  breakerSkipped?: number;
  /** Keys whose invalidation has not reached Redis yet (replayed when it answers again). */
  invalidationsPending?: number;
  /** Pending invalidations dropped because the pending set was full: their bound became the TTL. */
  invalidationsDropped?: number;
  /**
   * Requests whose answer waited on a loader call: the one that started the load plus every request that
   * joined it (two_tier: not an L1 miss answered by L2). For `none`, every request. Caching strategies only.
   */
  loadWaits?: number;
  /** Background reloads started by early refresh (XFetch) on a hit; 0 when it is off. */
  earlyRefreshes?: number;
  /**
   * Of `loads`, the loader calls made by those background reloads (two_tier's is skipped when L2 already
   * holds a newer entry): `loads − refreshLoads` are the loads requests asked for (misses).
   */
  refreshLoads?: number;
  /** Background reloads that failed (swallowed: the old value stays until its expiry). */
  refreshFailures?: number;
  /**
   * Fills Redis refused because the key was deleted (by any instance) after its load began, so the value may
   * predate the write; also a load slower than the strategy's `maxLoadMs`. Redis strategies only.
   */
  staleFillsRefused?: number;
}

export interface CacheStrategy {
  /**
   * The value, from the cache or the loader. `local` and two_tier's and tracking's L1 answer a hit with the
   * string itself, not a promise (`await` takes either): the server answers such a hit without a promise
   * (server.ts getProduct), and times it as an in-process hit (server/tier_timer.ts).
   */
  getOrLoad(key: string, load: Loader): string | Promise<string | undefined>;
  /** Drops `key` everywhere this strategy caches it; a load in flight for it is not cached. */
  delete(key: string): Promise<void>;
  /** O(1) snapshot of the counters since creation. */
  stats(): CacheStats;
  /** Whether the backing store answers (always true without one). */
  healthy(): Promise<boolean>;
  /** Releases what the strategy created; injected clients stay open. */
  close(): Promise<void>;
}

export interface StrategyModule<Options> {
  createCache(options: Options): CacheStrategy;
}
