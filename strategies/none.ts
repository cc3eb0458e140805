/**
 * none: no cache, the baseline every other strategy is compared with.
 *
 * Read path: every call runs the loader. Invalidation: nothing to invalidate.
 * Trade-offs: no staleness and no memory, all load goes to the database. Deliberately no coalescing of
 * concurrent loads for the same key: the baseline shows what the database sees without any help.
 * Failure behaviour: a loader error propagates to the caller. Serialization: values are strings that the
 * caller serializes (e.g. the JSON response body) and are returned as loaded.
 *
 * Copying this file? It needs nothing.
 *
 *   const cache = createCache();
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 */

export type NoneCacheOptions = Record<string, never>;

export function createCache(_options: NoneCacheOptions = {}) {
  let loads = 0;
  return {
    getOrLoad(_key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
      loads++;
      return load();
    },
    async delete(_key: string): Promise<void> {},
    stats() {
      // Every request waits on its own load: loadWaits is loads, for comparison with the caching strategies.
      return {
        tiers: {},
        loads,
        errors: 0,
        invalidationsPublished: 0,
        invalidationsReceived: 0,
        loadWaits: loads,
      };
    },
    async healthy(): Promise<boolean> {
      return true;
    },
    async close(): Promise<void> {},
  };
}
