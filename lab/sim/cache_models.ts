/**
 * The strategies' caches as the simulator models them: quick-lru 7.3.0 step for step, Redis `SET PX` expiry,
 * and each strategy's getOrLoad/delete over them with its tier counters (lab/sim/simulate.ts drives them).
 */

/** The file names in strategies/, as server.ts STRATEGY_NAMES. */
export type SimStrategy = "none" | "local" | "redis" | "two_tier" | "tracking";

export interface SimSettings {
  strategy: SimStrategy;
  /** local's quick-lru maxAge; the redis TTL; two_tier's and tracking's L2 TTL. */
  cacheTtlMs: number;
  /** two_tier's and tracking's L1 maxAge. */
  l1TtlMs: number;
  /** quick-lru maxSize of local and of two_tier's and tracking's L1. */
  l1MaxEntries: number;
  /** Ids 1..rows exist; any other id answers 404, is never cached, and a PUT to it invalidates nothing. */
  rows: number;
  /** Category of an existing product: its PUT invalidates that category's list pages. */
  categoryOf: (id: number) => number;
}

export interface TierCounts {
  hits: number;
  misses: number;
}

/**
 * quick-lru 7.3.0 (`new QuickLRU({ maxSize, maxAge })`, `get`/`set`/`delete`) with the clock passed in,
 * tracking presence and expiry only. Mirrors `node_modules/quick-lru/index.js` step for step: two maps,
 * `#size` counting inserts into the new one, rotation at `size >= maxSize`, promotion of an old-generation
 * hit through `#set` (which can rotate, and keeps the expiry), lazy expiry at `expiry <= now`.
 */
export class QuickLruModel<K> {
  readonly #maxSize: number;
  readonly #maxAgeMs: number;
  #size = 0;
  /** key → expiry in ms (Infinity: none), as quick-lru's `{ value, expiry }` items. */
  #cache = new Map<K, number>();
  #oldCache = new Map<K, number>();

  constructor(options: { maxSize: number; maxAgeMs?: number }) {
    if (!(options.maxSize > 0)) {
      throw new RangeError(`Cannot model quick-lru: maxSize must be > 0: received ${options.maxSize}`);
    }
    if (options.maxAgeMs !== undefined && !(options.maxAgeMs > 0)) {
      throw new RangeError(`Cannot model quick-lru: maxAgeMs must be > 0: received ${options.maxAgeMs}`);
    }
    this.#maxSize = options.maxSize;
    this.#maxAgeMs = options.maxAgeMs ?? Number.POSITIVE_INFINITY;
  }

  /** quick-lru `get` at `nowMs`: whether it returns the value. */
  get(key: K, nowMs: number): boolean {
    const expiry = this.#cache.get(key);
    if (expiry !== undefined) {
      // quick-lru tests `item.expiry ?` on this path, so an expiry of exactly 0 never expires here.
      if (expiry !== 0 && expiry <= nowMs) {
        this.delete(key);
        return false;
      }
      return true;
    }
    const oldExpiry = this.#oldCache.get(key);
    if (oldExpiry === undefined) return false;
    if (oldExpiry <= nowMs) {
      this.delete(key);
      return false;
    }
    this.#oldCache.delete(key);
    this.#insert(key, oldExpiry);
    return true;
  }

  /** quick-lru `set` at `nowMs` with the cache's maxAge. */
  set(key: K, nowMs: number): void {
    const expiry = this.#maxAgeMs === Number.POSITIVE_INFINITY ? this.#maxAgeMs : nowMs + this.#maxAgeMs;
    // In the new generation: overwritten in place, no insert counted. Otherwise inserted, and a copy still in
    // the old generation stays there (shadowed) until it rotates out or is deleted.
    if (this.#cache.has(key)) this.#cache.set(key, expiry);
    else this.#insert(key, expiry);
  }

  /** quick-lru `delete`: both generations; `#size` drops only for a key in the new one. */
  delete(key: K): boolean {
    const deleted = this.#cache.delete(key);
    if (deleted) this.#size--;
    return this.#oldCache.delete(key) || deleted;
  }

  #insert(key: K, expiry: number): void {
    this.#cache.set(key, expiry);
    this.#size++;
    if (this.#size >= this.#maxSize) {
      this.#size = 0;
      this.#oldCache = this.#cache;
      this.#cache = new Map();
    }
  }
}

/** Redis as the strategies use it: `SET key value PX ttlMs`, GET, DEL; no capacity limit. */
class RedisModel<K> {
  readonly #ttlMs: number;
  #expiresAtMs = new Map<K, number>();

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  get(key: K, nowMs: number): boolean {
    const expiresAtMs = this.#expiresAtMs.get(key);
    if (expiresAtMs === undefined) return false;
    // Redis expires a key once now > when (db.c keyIsExpired): still there at exactly the expiry instant.
    if (nowMs > expiresAtMs) {
      this.#expiresAtMs.delete(key);
      return false;
    }
    return true;
  }

  set(key: K, nowMs: number): void {
    this.#expiresAtMs.set(key, nowMs + this.#ttlMs);
  }

  delete(key: K): void {
    this.#expiresAtMs.delete(key);
  }
}

/** A cache key as the model spells it: product id (> 0), −category for its generation token, list page. */
export type ModelKey = number | string;

/** One strategy's `getOrLoad` and `delete`, with its tier counters. */
export interface CacheModel {
  tiers: Record<string, TierCounts>;
  /**
   * Whether the loader ran; `cacheable` false is a loader answering undefined (never cached). `instance`:
   * which server process asked (two_tier's L1 is per process; the other models share one cache).
   */
  getOrLoad(key: ModelKey, nowMs: number, cacheable: boolean, instance?: number): boolean;
  /** A write's invalidation: everywhere the strategy reaches (two_tier: L2, and every L1 via the bus). */
  delete(key: ModelKey): void;
}

function noneModel(): CacheModel {
  return {
    tiers: {},
    getOrLoad: () => true,
    delete: () => {},
  };
}

/** The store one tier keeps: presence and expiry only. */
interface TierStore {
  get(key: ModelKey, nowMs: number): boolean;
  set(key: ModelKey, nowMs: number): void;
  delete(key: ModelKey): unknown;
}

/** One tier in front of the loader, as local.ts and redis.ts: a hit, or a miss that loads and fills it. */
function singleTierModel(name: string, store: TierStore): CacheModel {
  const counts = { hits: 0, misses: 0 };
  return {
    tiers: { [name]: counts },
    getOrLoad(key, nowMs, cacheable) {
      if (store.get(key, nowMs)) {
        counts.hits++;
        return false;
      }
      counts.misses++;
      if (cacheable) store.set(key, nowMs);
      return true;
    },
    delete: (key) => store.delete(key),
  };
}

/**
 * two_tier (or tracking) over `instances` processes: an L1 each, one shared L2. An invalidation reaches every
 * L1 at the instant of the write (the bus delay, or the push's, about a millisecond, is not modelled: other
 * instances may serve a few more L1 hits than this model, never fewer). tracking fills L1 only from an L2 hit:
 * its own fill is a write, whose invalidation reaches every instance that read the key (it may have expired
 * from L2 while an L1 kept it), and that one no longer tracks it. Redis's active expiry, which may push an
 * expired key's invalidation before the next read, is not modelled.
 */
function tieredModel(settings: SimSettings, instances: number): CacheModel {
  const tracking = settings.strategy === "tracking";
  const l1s = Array.from(
    { length: instances },
    () => new QuickLruModel<ModelKey>({ maxSize: settings.l1MaxEntries, maxAgeMs: settings.l1TtlMs }),
  );
  const l2 = new RedisModel<ModelKey>(settings.cacheTtlMs);
  const l1Counts = { hits: 0, misses: 0 };
  const l2Counts = { hits: 0, misses: 0 };
  return {
    tiers: { l1: l1Counts, l2: l2Counts },
    getOrLoad(key, nowMs, cacheable, instance = 0) {
      const l1 = l1s[instance];
      if (l1 === undefined) {
        throw new RangeError(
          `Cannot model ${settings.strategy}: instance must be in 0..${instances - 1}: received ${instance}`,
        );
      }
      if (l1.get(key, nowMs)) {
        l1Counts.hits++;
        return false;
      }
      l1Counts.misses++;
      if (l2.get(key, nowMs)) {
        l2Counts.hits++;
        l1.set(key, nowMs); // the backfill starts a fresh L1 maxAge, whatever L2 has left
        return false;
      }
      l2Counts.misses++;
      if (cacheable) {
        l2.set(key, nowMs);
        if (!tracking) l1.set(key, nowMs);
        else for (const other of l1s) other.delete(key);
      }
      return true;
    },
    delete(key) {
      for (const l1 of l1s) l1.delete(key);
      l2.delete(key);
    },
  };
}

/**
 * The strategy's caches over `instances` server processes. `local` takes one process: separate processes
 * share nothing, so the simulator replays each instance's requests through its own model.
 */
export function createModel(settings: SimSettings, instances = 1): CacheModel {
  if (!(Number.isInteger(instances) && instances >= 1)) {
    throw new RangeError(
      `Cannot model the caches: instances must be a positive integer: received ${instances}`,
    );
  }
  if (instances > 1 && settings.strategy === "local") {
    throw new RangeError("Cannot model local over several instances in one model: replay each on its own");
  }
  switch (settings.strategy) {
    case "none":
      return noneModel();
    case "local":
      return singleTierModel(
        "local",
        new QuickLruModel<ModelKey>({ maxSize: settings.l1MaxEntries, maxAgeMs: settings.cacheTtlMs }),
      );
    case "redis":
      return singleTierModel("redis", new RedisModel<ModelKey>(settings.cacheTtlMs));
    case "two_tier":
    case "tracking":
      return tieredModel(settings, instances);
  }
}
