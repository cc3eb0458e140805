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
 * Early refresh (`earlyRefresh`, off when absent): XFetch (Vattani, Chierichetti, Lowenstein, VLDB 2015).
 * Each entry keeps its value, `deltaMs` (how long its load took) and its expiry; a hit refreshes early when
 * `now − deltaMs · β · ln(random()) ≥ expiry`, random() in (0, 1], i.e. with probability
 * exp(−(expiry − now) / (β · deltaMs)) per hit: slow loads and hot keys refresh sooner. β = 1 is the paper's
 * choice; larger refreshes earlier. The hit is answered with the current value at once and one background
 * reload starts (single-flighted with any load of that key; a delete during it disowns it like any load); its
 * value replaces the entry with a fresh `ttlMs`, its failure is counted (`refreshFailures`) and the old
 * value stays until its expiry, as does an absent result. Cost: one extra load per refresh, and a hot key
 * is reloaded a little before every expiry (more loads than the misses they save). No request then waits
 * on the database at expiry. Loads faster than a millisecond barely refresh early: they cost little anyway.
 * Failure behaviour: a loader error propagates and is not cached. Serialization: values are strings the
 * caller serializes; they are stored and returned by reference, never copied.
 *
 * Copying this file? Needs quick-lru@^7 (ESM only).
 *
 *   const cache = createCache({ maxSize: 10_000, ttlMs: 60_000, earlyRefresh: { beta: 1 } });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 */
import QuickLRU from "quick-lru";

export interface LocalCacheOptions {
  maxSize: number;
  ttlMs: number;
  /** XFetch early refresh; off when absent. `random` must return (0, 1] (default `1 − Math.random()`). */
  earlyRefresh?: { beta: number; random?: () => number };
}

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
  const counts = { hits: 0, misses: 0, loads: 0, loadWaits: 0, refreshes: 0, refreshLoads: 0, failures: 0 };

  function loadOnce(key: string, load: () => Promise<string | undefined>, refresh = false) {
    const pending = inflight.get(key);
    if (pending) return pending;
    async function fill(): Promise<string | undefined> {
      counts.loads++;
      if (refresh) counts.refreshLoads++;
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
          counts.refreshes++;
          loadOnce(key, load, true).catch(() => {
            counts.failures++;
          });
        }
        return cached.value;
      }
      counts.misses++;
      counts.loadWaits++; // every miss starts or joins a load
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
        invalidationsPublished: 0,
        invalidationsReceived: 0,
        loadWaits: counts.loadWaits,
        earlyRefreshes: counts.refreshes,
        refreshLoads: counts.refreshLoads,
        refreshFailures: counts.failures,
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
