/**
 * What each strategy sends on each outcome of a request, counted from the code: database round trips,
 * Redis round trips on the request's path (what it waits for) and Redis commands in all (what Redis
 * serves). Where each count comes from is in ROUND_TRIP_SOURCES and docs/advise.md.
 */

export const STRATEGIES = ["none", "local", "redis", "two_tier", "tracking"] as const;
export type Strategy = (typeof STRATEGIES)[number];

/**
 * What a request did, as the server times it: answered in process, answered from Redis (a joiner of a
 * flight counts here for redis, two_tier and tracking), waited on a database load, or a PUT.
 */
export const OUTCOMES = ["l1_hit", "l2_hit", "miss", "write"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface Trips {
  db: number;
  /** Redis round trips the request waits for, one after another. */
  redisOnPath: number;
  /** Every Redis command the outcome sends, on its path or in the background. */
  redisCommands: number;
}

/** The outcomes a strategy can have, with their trips; an outcome it cannot have is absent. */
export const ROUND_TRIPS: Record<Strategy, Partial<Record<Outcome, Trips>>> = {
  none: {
    miss: { db: 1, redisOnPath: 0, redisCommands: 0 },
    write: { db: 1, redisOnPath: 0, redisCommands: 0 },
  },
  local: {
    l1_hit: { db: 0, redisOnPath: 0, redisCommands: 0 },
    miss: { db: 1, redisOnPath: 0, redisCommands: 0 },
    write: { db: 1, redisOnPath: 0, redisCommands: 0 },
  },
  redis: {
    l2_hit: { db: 0, redisOnPath: 1, redisCommands: 1 },
    miss: { db: 1, redisOnPath: 2, redisCommands: 3 },
    write: { db: 1, redisOnPath: 1, redisCommands: 3 },
  },
  two_tier: {
    l1_hit: { db: 0, redisOnPath: 0, redisCommands: 0 },
    l2_hit: { db: 0, redisOnPath: 1, redisCommands: 1 },
    miss: { db: 1, redisOnPath: 2, redisCommands: 3 },
    write: { db: 1, redisOnPath: 2, redisCommands: 6 },
  },
  tracking: {
    l1_hit: { db: 0, redisOnPath: 0, redisCommands: 0 },
    l2_hit: { db: 0, redisOnPath: 1, redisCommands: 1 },
    miss: { db: 1, redisOnPath: 2, redisCommands: 3 },
    write: { db: 1, redisOnPath: 1, redisCommands: 3 },
  },
};

/** Where in the code each count is read from (docs/advise.md prints the same table). */
export const ROUND_TRIP_SOURCES: Record<Strategy, Partial<Record<Outcome, string>>> = {
  none: {
    miss: "none.ts getOrLoad runs the loader: server.ts loadById, one prepared SELECT",
    write: "server.ts putProduct: one UPDATE … RETURNING; none.ts delete sends nothing",
  },
  local: {
    l1_hit: "local.ts getOrLoad: lru.get, nothing sent",
    miss: "local.ts loadOnce: the loader, one SELECT",
    write: "server.ts putProduct: one UPDATE; local.ts delete is in process",
  },
  redis: {
    l2_hit: "redis.ts getOrLoad: tier.get, one GET",
    miss: "redis.ts getOrLoad: GET, then redisTier.load awaits READ_GENERATION (EVAL/EVALSHA) before the loader; the FILL script is sent with `void send(…)`, not awaited",
    write:
      "server.ts putProduct: UPDATE, then Promise.all of 3 deletes (product, summary, catgen), each one INVALIDATE script, sent together",
  },
  two_tier: {
    l1_hit: "two_tier.ts getOrLoad: l1.get, nothing sent",
    l2_hit: "two_tier.ts loadOnce → fill: tier.get, one GET, backfills L1",
    miss: "two_tier.ts fill: GET, then tier.load as redis.ts (READ_GENERATION awaited, FILL in the background)",
    write:
      "server.ts putProduct: UPDATE, then 3 deletes together, each INVALIDATE then (awaited after it) PUBLISH in redisTier.delete",
  },
  tracking: {
    l1_hit: "tracking.ts getOrLoad: l1.get, nothing sent",
    l2_hit: "tracking.ts loadOnce → fill: tier.get, one GET (Redis tracks the key from then on), fills L1",
    miss: "tracking.ts fill: GET, then tier.load as redis.ts (READ_GENERATION awaited, FILL in the background); L1 is not filled",
    write:
      "server.ts putProduct: UPDATE, then 3 deletes together, each one INVALIDATE script; Redis pushes the invalidations itself",
  },
};

/**
 * A list page (GET /products?category=…) first reads its category's generation (`catgen:<category>`, a
 * lookup whose loader makes a token, no database) and then the page under it. Assumed here: that
 * generation read is a hit in the strategy's nearest tier (redis: one more GET on the path; two_tier and
 * tracking: an L1 hit; local: in process; none: its loader, no round trip), and the page itself is a read of
 * its outcome.
 */
export const LIST_GENERATION_TRIPS: Record<Strategy, Trips> = {
  none: { db: 0, redisOnPath: 0, redisCommands: 0 },
  local: { db: 0, redisOnPath: 0, redisCommands: 0 },
  redis: { db: 0, redisOnPath: 1, redisCommands: 1 },
  two_tier: { db: 0, redisOnPath: 0, redisCommands: 0 },
  tracking: { db: 0, redisOnPath: 0, redisCommands: 0 },
};

export function isStrategy(name: unknown): name is Strategy {
  return typeof name === "string" && (STRATEGIES as readonly string[]).includes(name);
}
