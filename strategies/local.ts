/**
 * local: an in-process LRU (quick-lru) in front of the loader.
 *
 * Read path: LRU hit → value; miss → loader, and the result is kept for `ttlMs`. Concurrent misses for one
 * key share one load (an in-flight promise map, entry removed when it settles, so failures are not cached).
 * Invalidation: `delete(key)` drops the entry and disowns a load in flight for it, so a read that started
 * before a write cannot put the old value back after the write's `delete` returns.
 * Trade-offs: hits cost no network at all, but each process has its own copy: with N instances a write on
 * one leaves the others stale until `ttlMs` (use two_tier for that). quick-lru keeps two generations, so it
 * holds between `maxSize` and 2 × `maxSize` entries and evicts in bursts; expiry is lazy.
 * Failure behaviour: a loader error propagates and is not cached. Serialization: values are strings the
 * caller serializes; they are stored and returned by reference, never copied.
 *
 * Copying this file? Needs quick-lru@^7 (ESM only).
 *
 *   const cache = createCache({ maxSize: 10_000, ttlMs: 60_000 });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 */
import QuickLRU from "quick-lru";

export interface LocalCacheOptions {
  maxSize: number;
  ttlMs: number;
}

export function createCache(options: LocalCacheOptions) {
  const lru = new QuickLRU<string, string>({ maxSize: options.maxSize, maxAge: options.ttlMs });
  const inflight = new Map<string, Promise<string | undefined>>();
  let hits = 0;
  let misses = 0;
  let loads = 0;

  function loadOnce(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
    const pending = inflight.get(key);
    if (pending) return pending;
    async function fill(): Promise<string | undefined> {
      loads++;
      const value = await load();
      // A delete() during the load disowns this flight: its value may predate the write.
      if (value !== undefined && inflight.get(key) === flight) lru.set(key, value);
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
      const cached = lru.get(key);
      if (cached !== undefined) {
        hits++;
        return cached;
      }
      misses++;
      return loadOnce(key, load);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      lru.delete(key);
    },
    stats() {
      return {
        tiers: { local: { hits, misses } },
        loads,
        errors: 0,
        invalidationsPublished: 0,
        invalidationsReceived: 0,
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
