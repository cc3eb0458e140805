/**
 * GET /metrics in the Prometheus text format (prom-client), on when METRICS=1: each request's duration by
 * route and outcome, each database load's, and the counters /stats reports (per cache tier, loads, breaker,
 * invalidations, the database gate), with the process collectors known to work on Bun. Names, buckets and
 * how to read them: docs/metrics.md.
 */
import { Elysia } from "elysia";
import { Counter, Gauge, Histogram, type Registry as PromRegistry, Registry } from "prom-client";
import registerHeap from "prom-client/lib/metrics/heapSizeAndUsed";
import registerRss from "prom-client/lib/metrics/osMemoryHeap";
import registerCpu from "prom-client/lib/metrics/processCpuTotal";
import registerMaxFds from "prom-client/lib/metrics/processMaxFileDescriptors";
import registerFds from "prom-client/lib/metrics/processOpenFileDescriptors";
import registerStart from "prom-client/lib/metrics/processStartTime";
import type { ServerConfig } from "../server_config.ts";
import type { CacheStrategy, Loader } from "../strategies/_strategy.ts";
import { DbShedError } from "./db_gate.ts";
import type { LoadKind } from "./load_timer.ts";
import type { ServerStats } from "./meter.ts";

/**
 * Upper bounds in seconds, 10 µs to 10 s, neighbours at most 1.5× apart: a cache hit here takes tens of
 * microseconds, a miss about a millisecond, so prom-client's default (5 ms first) would put both in one bucket.
 */
export const DURATION_BUCKETS_S = [1, 10, 100, 1_000, 10_000, 100_000]
  .flatMap((decade) => [10, 15, 20, 30, 40, 50, 75].map((n) => (n * decade) / 1e6))
  .concat(10);

/** What answered a request: process memory, Redis, a database load, or no answer (shed, an error, invalid input). */
export const OUTCOMES = ["l1_hit", "l2_hit", "miss", "write", "shed", "error", "invalid"] as const;
export type Outcome = (typeof OUTCOMES)[number];
type Labels = { method: string; route: string; outcome: Outcome };

/**
 * What one request's cache lookups did, filled in by `lookup`: a request with several (a list page reads
 * its category's generation first) is a miss if any loaded, an L2 hit if any left process memory.
 */
export interface Lookups {
  loaded: boolean;
  left: boolean;
}

/** A lookup through the cache, counting what it did into `lookups` (none when metrics are off). */
export type Lookup = (
  cache: CacheStrategy,
  lookups: Lookups | undefined,
  key: string,
  load: Loader,
) => string | Promise<string | undefined>;

/**
 * Wraps a handler to time it; the handler gets the request's Lookups to fill in (none with metrics off). The
 * wrapper is a bound function: Elysia reads nothing from its source (an arrow passing the whole context on
 * made it build every part of every request, 40% of a local hit), so the route parses what it needs itself.
 */
export type Timed = <C, R extends Response | Promise<Response>>(
  route: string,
  handler: (context: C, lookups?: Lookups) => R,
  write?: boolean,
) => (context: C) => R;

/** Metrics are off: lookups go straight to the cache and handlers are registered as they are. */
const plainLookup: Lookup = (cache, _lookups, key, load) => cache.getOrLoad(key, load);

/** The server's metrics; `stats` is read at scrape time only (the meter is created after, with observeLoad). */
export function createMetrics(config: Pick<ServerConfig, "metrics" | "strategy">, stats: () => ServerStats) {
  if (!config.metrics) {
    return {
      lookup: plainLookup,
      timed: ((_route, handler) => handler) as Timed,
      observeLoad: undefined as ((kind: LoadKind, ms: number) => void) | undefined,
      routes: new Elysia({ name: "metrics-off" }),
    };
  }
  const { strategy } = config;
  const registry = new Registry();
  const requests = new Histogram({
    name: "cachelab_http_request_duration_seconds",
    help: "Time from a /products handler starting to its response being ready, by route and outcome.",
    labelNames: ["method", "route", "outcome"] as const,
    buckets: DURATION_BUCKETS_S,
    registers: [registry],
  });
  const loads = new Histogram({
    name: "cachelab_db_load_duration_seconds",
    help: "Time from a cache load's query being sent to its rows back, by route kind (the gate's wait not included).",
    labelNames: ["kind"] as const,
    buckets: DURATION_BUCKETS_S,
    registers: [registry],
  });
  const snapshot = registerCollectors(registry, stats);
  // The process collectors that work on Bun 1.4.4: not the event-loop lag one (monitorEventLoopDelay has
  // crashed Bun) nor gc, heap spaces or version, which report Node's internals Bun does not have.
  for (const register of [
    registerCpu,
    registerStart,
    registerRss,
    registerFds,
    registerMaxFds,
    registerHeap,
  ]) {
    register(registry, {});
  }
  new Gauge({
    name: "cachelab_info",
    help: "The server's strategy (value 1).",
    labelNames: ["strategy"],
    registers: [registry],
  }).set({ strategy }, 1);

  // Only two_tier's L1 count is read (it answers an L1 hit with a promise); local answers a hit synchronously
  // and redis has no in-process tier, so their hits cost no stats() call.
  const readsL1 = strategy === "two_tier";
  const lookup: Lookup = (cache, lookups, key, load) => {
    if (lookups === undefined) return cache.getOrLoad(key, load);
    const before = readsL1 ? cache.inProcessHits?.() : undefined;
    const found = cache.getOrLoad(key, () => {
      lookups.loaded = true;
      return load();
    });
    // two_tier counts an L1 hit before it awaits anything.
    if (typeof found === "string" || (readsL1 && cache.inProcessHits?.() !== before)) return found;
    // local and none have no second tier: an answer that is not a hit waited on a load, its own or one it joined.
    if (strategy === "local" || strategy === "none") lookups.loaded = true;
    else lookups.left = true;
    return found;
  };

  function outcomeOf(response: Response, lookups: Lookups, write: boolean): Outcome {
    const { status } = response;
    if (status === 503) return "shed";
    if (status >= 500) return "error";
    if (status >= 400 && status !== 404) return "invalid";
    if (write) return "write";
    return lookups.loaded ? "miss" : lookups.left ? "l2_hit" : "l1_hit";
  }

  /** Times a handler from its start to its response (sync or a promise), labelled by route and outcome. */
  function timed<C, R extends Response | Promise<Response>>(
    route: string,
    handler: (context: C, lookups?: Lookups) => R,
    write = false,
  ): (context: C) => R {
    const method = write ? "PUT" : "GET";
    // One labels object per outcome, made once: none is allocated per request.
    const labels = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, { method, route, outcome }]));
    const record = (outcome: Outcome, startedMs: number) =>
      requests.observe(labels[outcome] as Labels, (performance.now() - startedMs) / 1000);
    function wrapped(context: C): R {
      const startedMs = performance.now();
      const lookups: Lookups = { loaded: false, left: false };
      const answer = handler(context, lookups);
      if (!(answer instanceof Promise)) {
        record(outcomeOf(answer, lookups, write), startedMs);
        return answer;
      }
      // A rejection goes on to Elysia's onError, which answers a shed query 503 and anything else 500.
      return answer.then(
        (response: Response) => {
          record(outcomeOf(response, lookups, write), startedMs);
          return response;
        },
        (error: unknown) => {
          record(error instanceof DbShedError ? "shed" : "error", startedMs);
          throw error;
        },
      ) as R;
    }
    return wrapped.bind(null);
  }

  return {
    lookup,
    timed: timed as Timed,
    observeLoad: (kind: LoadKind, ms: number): void => loads.observe({ kind }, ms / 1000),
    routes: new Elysia({ name: "metrics" }).get("/metrics", async () => {
      snapshot(); // one /stats snapshot for every series of this scrape
      return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

type Reading = number | null | undefined | Record<string, number>;

/**
 * The counters and gauges /stats reports, each read from the meter's snapshot at scrape time (nothing on the
 * hot path). A reset (POST /admin/reset) starts the cache's counters from 0: Prometheus's rate() reads that
 * as a counter reset. A figure the server does not have (the gate's, with the gate off) is left out.
 */
function registerCollectors(registry: PromRegistry, read: () => ServerStats): () => void {
  let stats: ServerStats; // set by the returned snapshot(), before each scrape reads the series
  const tiers = (field: "hits" | "misses") => () =>
    Object.fromEntries(Object.entries(stats.tiers).map(([tier, counts]) => [tier, counts[field]]));
  const series: [
    kind: "counter" | "gauge",
    name: string,
    help: string,
    read: () => Reading,
    label?: string,
  ][] = [
    [
      "counter",
      "cachelab_requests_total",
      "Requests to /products routes, shed ones included.",
      () => stats.requests,
    ],
    [
      "counter",
      "cachelab_reads_total",
      "Valid GETs not shed: the requests a cache can answer.",
      () => stats.reads,
    ],
    [
      "counter",
      "cachelab_db_queries_total",
      "Queries sent to Postgres for requests, by kind.",
      () => ({ read: stats.readDbQueries, write: stats.writes }),
      "kind",
    ],
    [
      "counter",
      "cachelab_shed_total",
      "Requests answered 503 because the database gate did not admit their query.",
      () => stats.shed,
    ],
    [
      "counter",
      "cachelab_cache_hits_total",
      "Cache hits per tier (local, redis, or l1 and l2).",
      tiers("hits"),
      "tier",
    ],
    ["counter", "cachelab_cache_misses_total", "Cache misses per tier.", tiers("misses"), "tier"],
    [
      "counter",
      "cachelab_cache_loads_total",
      "Loader calls: what reached the database through the cache.",
      () => stats.loads,
    ],
    [
      "counter",
      "cachelab_cache_load_waits_total",
      "Requests whose answer waited on a load (started or joined).",
      () => stats.loadWaits,
    ],
    [
      "counter",
      "cachelab_cache_early_refreshes_total",
      "Background reloads started by early refresh.",
      () => stats.earlyRefreshes,
    ],
    [
      "counter",
      "cachelab_cache_refresh_loads_total",
      "Loader calls made by early refreshes.",
      () => stats.refreshLoads,
    ],
    [
      "counter",
      "cachelab_cache_refresh_failures_total",
      "Early refreshes that failed.",
      () => stats.refreshFailures,
    ],
    [
      "counter",
      "cachelab_cache_errors_total",
      "Redis failures swallowed (read as a miss, a write or delete skipped).",
      () => stats.cacheErrors,
    ],
    [
      "counter",
      "cachelab_cache_stale_fills_refused_total",
      "Redis fills refused: the key was deleted after the load began.",
      () => stats.staleFillsRefused,
    ],
    [
      "counter",
      "cachelab_redis_breaker_opens_total",
      "Times the Redis circuit breaker opened.",
      () => stats.breakerOpens,
    ],
    [
      "counter",
      "cachelab_redis_breaker_skipped_total",
      "Redis commands not sent because the breaker was open.",
      () => stats.breakerSkipped,
    ],
    [
      "gauge",
      "cachelab_redis_breaker_open",
      "1 while the Redis circuit breaker is open or probing, else 0.",
      () => (stats.breakerOpen === undefined ? undefined : Number(stats.breakerOpen)),
    ],
    [
      "counter",
      "cachelab_invalidations_published_total",
      "Invalidation messages published on the bus.",
      () => stats.invalidationsPublished,
    ],
    [
      "counter",
      "cachelab_invalidations_received_total",
      "Invalidation messages received from other instances.",
      () => stats.invalidationsReceived,
    ],
    [
      "gauge",
      "cachelab_invalidations_pending",
      "Keys whose delete has not reached Redis yet.",
      () => stats.invalidationsPending,
    ],
    [
      "counter",
      "cachelab_invalidations_dropped_total",
      "Pending deletes dropped because the pending set was full.",
      () => stats.invalidationsDropped,
    ],
    ["gauge", "cachelab_db_gate_waiting", "Requests waiting for a database slot now.", () => stats.dbWaiting],
    [
      "gauge",
      "cachelab_db_gate_in_flight",
      "Queries in flight through the database gate now.",
      () => stats.dbInFlight,
    ],
    [
      "counter",
      "cachelab_cache_resets_total",
      "POST /admin/reset calls: each started the cache from empty.",
      () => stats.resets,
    ],
  ];
  for (const [kind, name, help, value, label] of series) {
    const Metric = kind === "counter" ? Counter : Gauge;
    new Metric({
      name,
      help,
      labelNames: label ? [label] : [],
      registers: [registry],
      collect(this: Counter | Gauge) {
        this.reset();
        const reading = value();
        if (reading === null || reading === undefined) return;
        if (typeof reading === "number") return void set(this, {}, reading);
        for (const [labelValue, n] of Object.entries(reading))
          set(this, { [label as string]: labelValue }, n);
      },
    });
  }
  return () => {
    stats = read();
  };
}

function set(metric: Counter | Gauge, labels: Record<string, string>, value: number): void {
  if (metric instanceof Counter) metric.inc(labels, value);
  else metric.set(labels, value);
}
