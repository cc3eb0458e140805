/**
 * The server's counters, as GET /stats reports them: requests, reads, queries, writes, sheds and probes, each
 * counted inline by the handler it belongs to, and the distinct keys read in the current window.
 */
import { randomUUID } from "node:crypto";
import { type PgDriver, PROBE_PREFIX, type ServerConfig, type StrategyName } from "../server_config.ts";
import type { CacheStats, CacheStrategy } from "../strategies/_strategy.ts";
import type { RedisConnection } from "./clients.ts";
import type { DbGate } from "./db_gate.ts";
import { DistinctKeys } from "./distinct_keys.ts";
import { createLoadTimer, type LoadKind, type LoadTimes } from "./load_timer.ts";
import { createLoopMonitor } from "./loop_delay.ts";
import { createTierTimer, type OnRequest, type Outcome } from "./tier_timer.ts";

export interface ServerStats extends Omit<CacheStats, "errors"> {
  strategy: StrategyName;
  /** The Postgres driver the handlers' queries go through (PG_DRIVER). */
  pgDriver: PgDriver;
  /**
   * The Redis client of redis and two_tier (REDIS_CLIENT), or tracking's node-redis, as negotiated: client
   * and version, the protocol and server version Redis answered HELLO with on the latest connection, and the
   * fail-fast settings in force, e.g. `bun 1.4.4 RedisClient resp3 redis=7.0.15 …` (`valkey=9.1.2` on
   * Valkey). null for none and local.
   */
  redisClient: string | null;
  instanceId: string;
  /**
   * Requests to /products routes (the lab's own /stats, /health and /ready polls are not counted, nor are
   * probes: requests to /probe/products routes, such as write_mix's stale-read checker's).
   * Shed requests are included.
   */
  requests: number;
  /**
   * Queries the handlers sent to Postgres for requests (loader calls plus writes), probes not included.
   * Counted when the database gate admits them: a shed query was never sent.
   */
  dbQueries: number;
  /**
   * Valid GETs (a detail or a list page) that were not shed: the requests a cache can answer. A read shed
   * with a 503 is taken back out of `reads` (and counted in `shed`), and its query, never sent, is not in
   * `readDbQueries`, so 1 − readDbQueries / reads stays the share of the reads answered without Postgres.
   * A read is counted when it starts and taken out when it is shed: up to PG_ACQUIRE_TIMEOUT_MS later, so
   * a one-second delta can drop while reads are being shed.
   */
  reads: number;
  /** Of `reads`, those that reached Postgres (a loader call the gate admitted; coalesced misses share one). */
  readDbQueries: number;
  /** PUTs that reached Postgres (admitted by the gate). */
  writes: number;
  /**
   * Requests answered 503 with `Retry-After`, probes not included: those the database gate did not admit
   * (its queue was full, or they waited PG_ACQUIRE_TIMEOUT_MS; a shed cache load answers 503 to every
   * request sharing it, and each counts), and those shed on event-loop delay (`shedEventLoop`).
   */
  shed: number;
  /** Of `shed`, the requests answered 503 at once because the event loop was over MAX_EVENT_LOOP_DELAY_MS behind. */
  shedEventLoop: number;
  /**
   * How late the event loop's last 20 ms sample fired, and the latest since start or reset (server/
   * loop_delay.ts); null with MAX_EVENT_LOOP_DELAY_MS=0, which samples nothing.
   */
  eventLoopDelayMs: number | null;
  eventLoopDelayPeakMs: number | null;
  /**
   * The database gate (PG_QUEUE_MAX, PG_ACQUIRE_TIMEOUT_MS): requests waiting for a slot now, the most that
   * ever waited at once since start (not reset by a window), and queries in flight now (≤ PG_POOL_MAX).
   * All `null` while both settings are off: there is no gate then, and nothing counts them.
   */
  dbWaiting: number | null;
  dbWaitingPeak: number | null;
  dbInFlight: number | null;
  /**
   * Distinct resources (a product id, a list page) the reads asked for since the window began: exact up to
   * 131 072, estimated (±0.8%) past that, as `distinctKeysExact` says.
   */
  distinctKeys: number;
  distinctKeysExact: boolean;
  /** Probe requests, and the queries they sent to Postgres. */
  probes: number;
  probeDbQueries: number;
  cacheErrors: number;
  /**
   * How long the workload's database loads took, per route kind (detail, summary, list page), from the query
   * sent to its rows back (the gate's wait not included; probes not counted; a failed query not timed):
   * count, sum, mean, p50 and p99 (< 1% relative error) and the histogram's non-empty buckets, for deltas
   * (server/load_timer.ts). Started over by POST /admin/reset.
   */
  dbLoadMs: Record<LoadKind, LoadTimes>;
  /**
   * How long the workload's requests took by outcome (server/tier_timer.ts), from the handler starting to
   * its response being ready: an in-process hit (`l1_hit`), a Redis hit (`l2_hit`), a request that waited on
   * a database load (`miss`), a PUT (`write`), and those not answered (`shed`, `error`, `invalid`); probes
   * not counted. As `dbLoadMs`: count, sum, mean, p50, p99 and buckets, of the requests timed: one in
   * `requestTimedEvery` (TIER_TIMING), chosen by arrival. Empty with TIER_TIMING=0.
   */
  requestMs: Record<Outcome, LoadTimes>;
  /** Every request by outcome, timed or not (all 0 with TIER_TIMING=0). */
  requestCounts: Record<Outcome, number>;
  /** One request in this many is timed into `requestMs` (TIER_TIMING; 0 = none). */
  requestTimedEvery: number;
  /** Each Redis command the strategy sent on the request path (GET, EVAL/EVALSHA, PUBLISH), timed alone. */
  redisCommandMs: LoadTimes;
  /** Resets since start (POST /admin/reset): each gave the strategy a fresh cache, its counters from 0. */
  resets: number;
  /**
   * The server process as it sees itself: CPU seconds (user + system) since start and its peak RSS. What the
   * lab reads for a server it did not start (it reads /proc for its own).
   */
  process: { cpuS: number; rssPeakMb: number };
}

/** Counters for one server; the handlers call admit, countRead and countQuery inline. */
export function createMeter(sources: {
  config: ServerConfig;
  /** The strategy's cache as it is now: a reset replaces it. */
  cache: () => CacheStrategy;
  redis: RedisConnection | null;
  gate: DbGate | null;
  /** Distinct keys counted exactly before /stats estimates them (server/distinct_keys.ts). */
  distinctKeysExactMax?: number | undefined;
  /** Told of each timed load and request too (server/metrics.ts's histograms, when on). */
  metrics?: {
    observeLoad?: ((kind: LoadKind, ms: number) => void) | undefined;
    observeRequest?: OnRequest | undefined;
  };
}) {
  const { config, redis, gate } = sources;
  const instanceId = randomUUID();
  let resets = 0;
  const counts = {
    requests: 0,
    reads: 0,
    readDbQueries: 0,
    writes: 0,
    shed: 0,
    shedEventLoop: 0,
    probes: 0,
    probeDbQueries: 0,
  };
  // The resources read since the window began (POST /stats/window): ids as numbers, list pages as strings;
  // bounded, so a server nobody resets cannot be grown without end by distinct URLs.
  const newKeysSeen = () => new DistinctKeys(sources.distinctKeysExactMax);
  let keysSeen = newKeysSeen();
  const loadTimer = createLoadTimer(sources.metrics?.observeLoad);
  // Each request by outcome and each Redis command (TIER_TIMING): the handlers' `timed` and `lookup`.
  const timer = createTierTimer(config, sources.metrics?.observeRequest);
  const loop = createLoopMonitor(config.maxEventLoopDelayMs);
  /**
   * Counts a /products request, first thing in its handler: the workload's, or a probe (its route). True when
   * the workload's request is to be shed because the event loop is behind (the handler answers `overloaded()`);
   * a probe never is. The handlers do it themselves: an Elysia onRequest hook did it for ~20% of a hit's cost.
   */
  function admit(probe: boolean): boolean {
    if (probe) {
      counts.probes++;
      return false;
    }
    counts.requests++;
    if (!loop.state.shedding) return false;
    counts.shed++;
    counts.shedEventLoop++;
    return true;
  }

  // The answer to a request shed on event-loop delay: 503 with Retry-After, as the database gate's, but
  // made without an Error (capturing its stack costs microseconds the overloaded loop does not have).
  const overloadedBody = JSON.stringify({
    error: "the server is overloaded: its event loop is behind",
    retryAfterS: loop.retryAfterS,
  });
  const overloadedHeaders = { "content-type": "application/json", "retry-after": String(loop.retryAfterS) };
  function overloaded(): Response {
    return new Response(overloadedBody, { status: 503, headers: overloadedHeaders });
  }

  /** Counts a read and its resource unless it is a probe. */
  function countRead(probe: boolean, key: number | string): void {
    if (probe) return;
    counts.reads++;
    keysSeen.add(key);
  }

  function countQuery(probe: boolean, write = false): void {
    if (probe) counts.probeDbQueries++;
    else if (write) counts.writes++;
    else counts.readDbQueries++;
  }

  /**
   * A /products request turned away before its handler ran (no such route, a body that does not parse) is
   * still a request: onError counts it here, since only the handlers count (a global hook cost 15–25% of hits).
   */
  function countTurnedAway(code: unknown, request: Request): void {
    if (
      (code === "NOT_FOUND" || code === "PARSE" || code === "VALIDATION") &&
      request.url.includes("/products")
    )
      admit(isProbe(request));
  }

  /** Counts a request answered 503 because its query was shed: a shed read leaves `reads` (see ServerStats). */
  function countShed(request: Request): void {
    if (isProbe(request)) return;
    counts.shed++;
    if (request.method === "GET") counts.reads--;
  }

  function stats(): ServerStats {
    const { errors, ...rest } = sources.cache().stats();
    const usage = process.resourceUsage();
    return {
      strategy: config.strategy,
      pgDriver: config.pgDriver,
      redisClient: redis?.describe() ?? null,
      instanceId,
      ...counts,
      dbQueries: counts.readDbQueries + counts.writes,
      ...(gate === null ? { dbWaiting: null, dbWaitingPeak: null, dbInFlight: null } : gate.stats()),
      distinctKeys: keysSeen.size,
      distinctKeysExact: keysSeen.exact,
      cacheErrors: errors,
      ...rest,
      dbLoadMs: loadTimer.snapshot(),
      ...timer.snapshot(),
      ...loop.stats(),
      resets,
      process: {
        cpuS: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
        rssPeakMb: Math.round(usage.maxRSS / 102.4) / 10,
      },
    };
  }

  return {
    instanceId,
    /** getOrLoad, noting what it did for `timed`, which times a handler by its request's outcome (tier_timer.ts). */
    lookup: timer.lookup,
    timed: timer.timed,
    timeCommands: timer.timeCommands,
    admit,
    countRead,
    countQuery,
    countTurnedAway,
    countShed,
    overloaded,
    close: loop.close,
    countReset: () => {
      resets++;
      loop.reset();
      loadTimer.reset();
      timer.reset();
    },
    /** Times a workload load's query into its kind's histogram; a probe's is not timed. */
    timeLoad<T>(probe: boolean, kind: LoadKind, query: Promise<T>): Promise<T> {
      return probe ? query : loadTimer.time(kind, query);
    },
    stats,
    /** One snapshot and a new window at the same instant: the caller's "before" for a measured run. */
    window(): ServerStats {
      const snapshot = stats();
      keysSeen = newKeysSeen();
      return snapshot;
    },
  };
}

export type Meter = ReturnType<typeof createMeter>;

/** Whether a request went to a probe route (read only off the hot path: on a shed or a turned-away request). */
function isProbe(request: Request): boolean {
  return new URL(request.url).pathname.startsWith(`${PROBE_PREFIX}/`);
}
