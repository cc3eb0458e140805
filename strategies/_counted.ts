/**
 * A strategy with the counters the lab reads: its `onEvent` is counted here, and stats() returns its own
 * tiers, loads and errors (and a Redis one's pending deletes) with those counts, under the names and in the
 * order /stats has always had (server/strategy.ts and the contract suite wire it; a pasted copy does without).
 */
import type { CacheStats, CacheStrategy } from "./_strategy.ts";
import type { LocalEvent } from "./local.ts";
import type { TwoTierEvent } from "./two_tier.ts";

/** What a Redis strategy's own stats() holds. */
type OwnStats = Pick<CacheStats, "tiers" | "loads" | "errors"> & { invalidationsPending: number };

/** `create` makes the strategy with the `onEvent` given; the result reports the lab's counters too. */
export function counted(
  create: (onEvent: (event: TwoTierEvent) => void) => Omit<CacheStrategy, "stats"> & { stats(): OwnStats },
): CacheStrategy {
  const counts: Record<TwoTierEvent, number> = {
    invalidationsPublished: 0,
    invalidationsReceived: 0,
    breakerOpens: 0,
    breakerCloses: 0,
    breakerSkipped: 0,
    invalidationsDropped: 0,
    loadWaits: 0,
    earlyRefreshes: 0,
    refreshLoads: 0,
    refreshFailures: 0,
    staleFillsRefused: 0,
  };
  const breaker = { open: false };
  const onEvent = (event: TwoTierEvent) => {
    if (event === "breakerOpens") breaker.open = true;
    else if (event === "breakerCloses") breaker.open = false;
  };
  return withCounts(counts, create, onEvent, ({ tiers, loads, errors, invalidationsPending }) => {
    const {
      invalidationsPublished,
      invalidationsReceived,
      breakerOpens,
      breakerCloses,
      breakerSkipped,
      ...rest
    } = counts;
    return {
      tiers,
      loads,
      errors,
      invalidationsPublished,
      invalidationsReceived,
      breakerOpens,
      breakerCloses,
      breakerOpen: breaker.open,
      breakerSkipped,
      invalidationsPending,
      ...rest,
    };
  });
}

/** local, counted the same way: its four events, and the two invalidation counts it never has, as 0. */
export function countedLocal(
  create: (onEvent: (event: LocalEvent) => void) => Omit<CacheStrategy, "stats"> & {
    stats(): Pick<CacheStats, "tiers" | "loads" | "errors">;
  },
): CacheStrategy {
  const counts: Record<LocalEvent, number> = {
    loadWaits: 0,
    earlyRefreshes: 0,
    refreshLoads: 0,
    refreshFailures: 0,
  };
  return withCounts(counts, create, undefined, ({ tiers, loads, errors }) => ({
    tiers,
    loads,
    errors,
    invalidationsPublished: 0,
    invalidationsReceived: 0,
    ...counts,
  }));
}

/**
 * The strategy `create` makes with an `onEvent` that adds to `counts` (and tells `also`); stats() as `report`
 * puts them.
 */
function withCounts<Event extends string, Own extends { tiers: CacheStats["tiers"] }>(
  counts: Record<Event, number>,
  create: (onEvent: (event: Event) => void) => Omit<CacheStrategy, "stats"> & { stats(): Own },
  also: ((event: Event) => void) | undefined,
  report: (own: Own) => CacheStats,
): CacheStrategy {
  const cache = create((event) => {
    counts[event]++;
    also?.(event);
  });
  return {
    getOrLoad: cache.getOrLoad,
    delete: cache.delete,
    healthy: cache.healthy,
    close: cache.close,
    stats: () => report(cache.stats()),
  };
}
