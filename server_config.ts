/**
 * The server's configuration: strategy names, defaults and the environment reader, apart from the app so the
 * lab can read them without loading Elysia, drizzle or the strategies.
 */

/** Strategy names: each is the file name in strategies/, the CLI value and the CSV value. */
export const STRATEGY_NAMES = ["none", "local", "redis", "two_tier", "tracking"] as const;
export type StrategyName = (typeof STRATEGY_NAMES)[number];

/** Postgres drivers under drizzle: postgres.js (the default) or Bun's built-in `Bun.SQL`. */
export const PG_DRIVERS = ["postgres-js", "bun-sql"] as const;
export type PgDriver = (typeof PG_DRIVERS)[number];

/**
 * Redis clients of redis and two_tier: ioredis (the default) or Bun's built-in `RedisClient`; on a Redis
 * Cluster (REDIS_CLUSTER_NODES) ioredis's Cluster or node-redis's (`node-redis`). tracking: ioredis (two
 * connections, the invalidations redirected to the second) or node-redis (one, RESP3 pushes); Bun's client
 * hands over no invalidations.
 */
export const REDIS_CLIENTS = ["ioredis", "bun", "node-redis"] as const;
export type RedisClientName = (typeof REDIS_CLIENTS)[number];

export interface ServerConfig {
  strategy: StrategyName;
  /** Interface to listen on; loopback unless told otherwise. */
  host: string;
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /**
   * A Redis Cluster's nodes, `host:port` each (REDIS_CLUSTER_NODES), used instead of `redisUrl`; null: one
   * Redis. Its password: REDIS_CLUSTER_PASSWORD (`redisClusterPassword`, null for none).
   */
  redisClusterNodes: string[] | null;
  redisClusterPassword: string | null;
  /** The Redis client of the Redis strategies (REDIS_CLIENT). */
  redisClient: RedisClientName;
  /** The Postgres client under drizzle (PG_DRIVER). */
  pgDriver: PgDriver;
  pgPoolMax: number;
  /**
   * Most requests that may wait for a database slot (server.ts's admission gate) before the next is shed
   * with a 503; 0 = unbounded. With `pgAcquireTimeoutMs` also 0 there is no gate at all.
   */
  pgQueueMax: number;
  /**
   * Longest a request waits for a database slot before it is shed with a 503; 0 = no limit. On by default,
   * so a stalled database turns requests away instead of queueing them without a bound.
   */
  pgAcquireTimeoutMs: number;
  /**
   * Postgres's statement_timeout on the server's connections (both drivers); 0 = none. A cancelled
   * statement (SQLSTATE 57014) answers 503 with Retry-After.
   */
  pgStatementTimeoutMs: number;
  /**
   * Event-loop delay past which /products requests are answered 503 with Retry-After at once (server/
   * loop_delay.ts): overload when the CPU, not the pool, is the limit; 0 = never.
   */
  maxEventLoopDelayMs: number;
  /** Time to live of the shared tier (redis, two_tier's and tracking's L2) and of `local`. */
  cacheTtlMs: number;
  l1MaxEntries: number;
  /**
   * two_tier's and tracking's L1 time to live: two_tier's staleness bound when an invalidation message is lost,
   * tracking's past an expiry in Redis (which Redis does not push on time).
   */
  l1TtlMs: number;
  /** XFetch early refresh's β for local, redis, two_tier and tracking (see their headers); 0 = off. */
  earlyRefreshBeta: number;
  /** GET /metrics in the Prometheus format and the request timing it needs (METRICS=1; server/metrics.ts). */
  metrics: boolean;
  /**
   * Each request counted by outcome and one in N timed, each Redis command timed on its own, into /stats
   * (TIER_TIMING=N, 4 by default: server/tier_timer.ts; 1 times every request). 0 turns it off, only to
   * price it (bench/hot_path.ts).
   */
  tierTiming: number;
  /** Off by default: with SO_REUSEPORT an orphan server on the same port silently shares the traffic. */
  reusePort: boolean;
  redisKeyPrefix: string;
  /**
   * The token /admin/* and /stats/window require in the `x-cachelab-admin-token` header
   * (CACHELAB_ADMIN_TOKEN), or null: then they answer only on a loopback bind (server/admin_auth.ts).
   */
  adminToken: string | null;
  /**
   * The process that started this server (CACHELAB_PARENT_PID, set by the lab), or null: the server drains
   * and exits when that process is gone, so a SIGKILLed runner (or a test runner that exits without its
   * exit hooks) leaves no server behind.
   */
  parentPid: number | null;
}

export const DEFAULT_CONFIG = {
  host: "127.0.0.1",
  port: 3000,
  databaseUrl: "postgres://postgres:postgres@127.0.0.1:5432/cachelab",
  redisUrl: "redis://127.0.0.1:6379",
  redisClusterNodes: null,
  redisClusterPassword: null,
  redisClient: "ioredis",
  pgDriver: "postgres-js",
  pgPoolMax: 10,
  pgQueueMax: 0,
  pgAcquireTimeoutMs: 2_000,
  pgStatementTimeoutMs: 5_000,
  maxEventLoopDelayMs: 50,
  cacheTtlMs: 60_000,
  l1MaxEntries: 10_000,
  l1TtlMs: 5_000,
  earlyRefreshBeta: 0,
  metrics: false,
  tierTiming: 4,
  reusePort: false,
  redisKeyPrefix: "cachelab:",
  adminToken: null,
  parentPid: null,
} as const;

/** The largest Postgres int4: ids, counts and TTLs are bounded by it. */
export const MAX_INT4 = 2_147_483_647;

const NUMBER_FORMS = {
  integer: /^\d+$/,
  decimal: /^\d+(\.\d+)?$/,
} as const;

/** `name` from the environment as a non-negative number of `form` in min..max, or `fallback` when unset. */
function envNumber(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  range: { min: number; max: number; form: keyof typeof NUMBER_FORMS },
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!NUMBER_FORMS[range.form].test(raw) || value < range.min || value > range.max) {
    throw new RangeError(
      `Cannot read ${name}: expected ${range.form === "integer" ? "an integer" : "a decimal"} in ${range.min}..${range.max}: received ${raw}`,
    );
  }
  return value;
}

function envInt(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  return envNumber(env, name, fallback, { min, max, form: "integer" });
}

/** `name` from the environment as one of `choices`, or `fallback` when unset. */
export function envChoice<T extends string>(
  env: Record<string, string | undefined>,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new RangeError(`Cannot read ${name}: expected one of ${choices.join(", ")}: received ${raw}`);
  }
  return raw as T;
}

/** Reads the server's environment once; throws RangeError on any bad value. */
/** A 0/1 setting; anything else is refused. */
function envFlag(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name] ?? (fallback ? "1" : "0");
  if (raw !== "0" && raw !== "1")
    throw new RangeError(`Cannot read ${name}: expected 0 or 1: received ${raw}`);
  return raw === "1";
}

/** REDIS_CLUSTER_NODES as `host:port` strings (null when unset), checked against the client it needs. */
function clusterNodes(
  env: Record<string, string | undefined>,
  client: RedisClientName,
  strategy: string,
): string[] | null {
  const raw = env.REDIS_CLUSTER_NODES;
  if (raw === undefined || raw === "") {
    if (client === "node-redis" && strategy !== "tracking") {
      throw new RangeError(
        "Cannot read REDIS_CLIENT: node-redis is the lab's client for tracking and a Redis Cluster only: received node-redis without REDIS_CLUSTER_NODES",
      );
    }
    return null;
  }
  const nodes = raw.split(",").map((node) => node.trim());
  for (const node of nodes) {
    const match = /^([^\s:/@]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(node);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65_535) {
      throw new RangeError(
        `Cannot read REDIS_CLUSTER_NODES: expected host:port[,host:port…]: received ${raw}`,
      );
    }
  }
  if (client === "bun") {
    throw new RangeError(
      "Cannot read REDIS_CLUSTER_NODES: Bun's RedisClient has no cluster support (no slot map, no MOVED or ASK redirects); use REDIS_CLIENT=ioredis or node-redis: received REDIS_CLIENT=bun",
    );
  }
  return nodes;
}

export function readConfig(env: Record<string, string | undefined> = process.env): ServerConfig {
  const strategy = env.CACHE_STRATEGY ?? "none";
  if (!(STRATEGY_NAMES as readonly string[]).includes(strategy)) {
    throw new RangeError(
      `Cannot read CACHE_STRATEGY: expected one of ${STRATEGY_NAMES.join(", ")}: received ${strategy}`,
    );
  }
  const reusePort = envFlag(env, "REUSE_PORT", DEFAULT_CONFIG.reusePort);
  const metrics = envFlag(env, "METRICS", DEFAULT_CONFIG.metrics);
  const redisClient = envChoice(env, "REDIS_CLIENT", REDIS_CLIENTS, DEFAULT_CONFIG.redisClient);
  const redisClusterNodes = clusterNodes(env, redisClient, strategy);
  if (strategy === "tracking" && redisClient === "bun") {
    throw new RangeError(
      "Cannot run CACHE_STRATEGY=tracking on REDIS_CLIENT=bun: Bun's RedisClient hands over no invalidations; use ioredis or node-redis: received bun",
    );
  }
  if (strategy === "tracking" && redisClusterNodes !== null) {
    throw new RangeError(
      "Cannot run CACHE_STRATEGY=tracking on REDIS_CLUSTER_NODES: node-redis's cluster client hands over no invalidation pushes (no emitInvalidate); run tracking on one Redis (REDIS_URL)",
    );
  }
  return {
    strategy: strategy as StrategyName,
    host: env.HOST || DEFAULT_CONFIG.host,
    port: envInt(env, "PORT", DEFAULT_CONFIG.port, 0, 65_535),
    databaseUrl: env.DATABASE_URL || DEFAULT_CONFIG.databaseUrl,
    redisUrl: env.REDIS_URL || DEFAULT_CONFIG.redisUrl,
    redisClusterNodes,
    redisClusterPassword: env.REDIS_CLUSTER_PASSWORD || null,
    redisClient,
    pgDriver: envChoice(env, "PG_DRIVER", PG_DRIVERS, DEFAULT_CONFIG.pgDriver),
    pgPoolMax: envInt(env, "PG_POOL_MAX", DEFAULT_CONFIG.pgPoolMax, 1, 1_000),
    pgQueueMax: envInt(env, "PG_QUEUE_MAX", DEFAULT_CONFIG.pgQueueMax, 0, 1_000_000),
    pgAcquireTimeoutMs: envInt(env, "PG_ACQUIRE_TIMEOUT_MS", DEFAULT_CONFIG.pgAcquireTimeoutMs, 0, MAX_INT4),
    pgStatementTimeoutMs: envInt(
      env,
      "PG_STATEMENT_TIMEOUT_MS",
      DEFAULT_CONFIG.pgStatementTimeoutMs,
      0,
      MAX_INT4,
    ),
    maxEventLoopDelayMs: envInt(
      env,
      "MAX_EVENT_LOOP_DELAY_MS",
      DEFAULT_CONFIG.maxEventLoopDelayMs,
      0,
      60_000,
    ),
    cacheTtlMs: envInt(env, "CACHE_TTL_MS", DEFAULT_CONFIG.cacheTtlMs, 1, MAX_INT4),
    l1MaxEntries: envInt(env, "L1_MAX_ENTRIES", DEFAULT_CONFIG.l1MaxEntries, 1, 100_000_000),
    l1TtlMs: envInt(env, "L1_TTL_MS", DEFAULT_CONFIG.l1TtlMs, 1, MAX_INT4),
    earlyRefreshBeta: envNumber(env, "EARLY_REFRESH_BETA", DEFAULT_CONFIG.earlyRefreshBeta, {
      min: 0,
      max: 1_000,
      form: "decimal",
    }),
    metrics,
    tierTiming: envInt(env, "TIER_TIMING", DEFAULT_CONFIG.tierTiming, 0, 1_000_000),
    reusePort,
    redisKeyPrefix: env.REDIS_KEY_PREFIX || DEFAULT_CONFIG.redisKeyPrefix,
    adminToken: env.CACHELAB_ADMIN_TOKEN || null,
    parentPid: env.CACHELAB_PARENT_PID ? envInt(env, "CACHELAB_PARENT_PID", 0, 1, 4_194_304) : null,
  };
}

/** The header /admin/* and /stats/window require (server/admin_auth.ts): not CORS-safelisted, so a page cannot send it unasked. */
export const ADMIN_TOKEN_HEADER = "x-cachelab-admin-token";

/**
 * Where the lab's probes go: the product routes again under this prefix, kept out of the workload's counters
 * (`/probe/products/7`). A path costs the workload's requests nothing; a header read cost a hit 3% of its CPU.
 */
export const PROBE_PREFIX = "/probe";
