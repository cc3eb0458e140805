/**
 * local: an in-process LRU (quick-lru) in front of the loader.
 *
 * Read path: LRU hit → the value itself, not a promise (`await` takes either; a server can answer a hit
 * without one). A miss starts or joins one load per key (failed or absent results are not cached) and keeps
 * the value for `ttlMs`. quick-lru keeps two generations: between `maxSize` and 2 × `maxSize` entries,
 * evicted in bursts; expiry is lazy.
 * Invalidation: `delete(key)` drops the entry and disowns a load in flight for it, so a read that began
 * before a write cannot put the old value back after the write's delete returns.
 * Failure behaviour: a loader error reaches the caller and is not cached.
 * Staleness bound: none in this process; every other process keeps its own copy until `ttlMs` (two_tier
 * tells them).
 * Early refresh (`earlyRefresh: { beta }`, off when absent): XFetch answers a hit near its expiry at once and
 * reloads it in the background, the sooner the slower its load was; a failed reload keeps the old value.
 *
 *   const cache = createCache({ maxSize: 10_000, ttlMs: 60_000, earlyRefresh: { beta: 1 } });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 *
 * Copying this file? Needs quick-lru@^7 (ESM only).
 * Why it works this way: docs/strategies.md.
 */
import QuickLRU from "quick-lru";

export interface LocalCacheOptions {
  maxSize: number;
  ttlMs: number;
  /** XFetch early refresh; off when absent. `random` must return (0, 1] (default `1 − Math.random()`). */
  earlyRefresh?: { beta: number; random?: () => number };
  /** Told of each event (a miss waiting on a load, an early refresh…); optional, never on a plain hit. */
  onEvent?: (event: LocalEvent) => void;
}

/** What `onEvent` is told, each named for the counter a lab would add it to. */
export type LocalEvent = "loadWaits" | "earlyRefreshes" | "refreshLoads" | "refreshFailures";

/** XFetch's decision: whether a hit at `nowMs` refreshes an entry expiring at `expiryMs` early. */
export function xfetchDue(nowMs: number, expiryMs: number, deltaMs: number, beta: number, random: number) {
  const r = Math.min(1, Math.max(random, Number.MIN_VALUE)); // ln(0) = −∞: 0 counts as the smallest draw
  return nowMs - deltaMs * beta * Math.log(r) >= expiryMs;
}

interface Entry {
  value: string;
  deltaMs: number;
  expiryMs: number;
}

export function createCache(options: LocalCacheOptions) {
  const early = options.earlyRefresh;
  if (early && !(Number.isFinite(early.beta) && early.beta > 0)) {
    throw new RangeError(`Cannot create cache: earlyRefresh.beta must be > 0: received ${early.beta}`);
  }
  const random = early?.random ?? (() => 1 - Math.random());
  const lru = new QuickLRU<string, Entry>({ maxSize: options.maxSize, maxAge: options.ttlMs });
  const inflight = new Map<string, Promise<string | undefined>>();
  const emit = options.onEvent ?? (() => {});
  const counts = { hits: 0, misses: 0, loads: 0 };

  function loadOnce(key: string, load: () => Promise<string | undefined>, refresh = false) {
    const pending = inflight.get(key);
    if (pending) return pending;
    async function fill(): Promise<string | undefined> {
      counts.loads++;
      if (refresh) emit("refreshLoads");
      const startedMs = performance.now();
      const value = await load();
      // A delete() during the load disowns this flight: its value may predate the write.
      if (value !== undefined && inflight.get(key) === flight) {
        lru.set(key, { value, deltaMs: performance.now() - startedMs, expiryMs: Date.now() + options.ttlMs });
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
    getOrLoad(key: string, load: () => Promise<string | undefined>): string | Promise<string | undefined> {
      const cached = lru.get(key);
      if (cached !== undefined) {
        counts.hits++;
        const due = early && xfetchDue(Date.now(), cached.expiryMs, cached.deltaMs, early.beta, random());
        // A load already in flight for this key will replace the entry: deciders share it.
        if (due && !inflight.has(key)) {
          emit("earlyRefreshes");
          loadOnce(key, load, true).catch(() => emit("refreshFailures"));
        }
        return cached.value;
      }
      counts.misses++;
      emit("loadWaits"); // every miss starts or joins a load
      return loadOnce(key, load);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      lru.delete(key);
    },
    stats() {
      return {
        tiers: { local: { hits: counts.hits, misses: counts.misses } },
        loads: counts.loads,
        errors: 0,
      };
    },
    async healthy(): Promise<boolean> {
      return true;
    },
    async close(): Promise<void> {
      lru.clear();
      inflight.clear();
    },
  };
}
