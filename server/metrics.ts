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
import type { LoadKind } from "./load_timer.ts";
import type { ServerStats } from "./meter.ts";
import type { OnRequest } from "./tier_timer.ts";

/**
 * Upper bounds in seconds, 10 µs to 10 s, neighbours at most 1.5× apart: a cache hit here takes tens of
 * microseconds, a miss about a millisecond, so prom-client's default (5 ms first) would put both in one bucket.
 */
export const DURATION_BUCKETS_S = [1, 10, 100, 1_000, 10_000, 100_000]
  .flatMap((decade) => [10, 15, 20, 30, 40, 50, 75].map((n) => (n * decade) / 1e6))
  .concat(10);

/** The server's metrics; `stats` is read at scrape time only (the meter is created after, with observeLoad). */
export function createMetrics(config: Pick<ServerConfig, "metrics" | "strategy">, stats: () => ServerStats) {
  if (!config.metrics) {
    return {
      observeRequest: undefined as OnRequest | undefined,
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

  return {
    // Each request as the tier timer (server/tier_timer.ts) labels it: outcomes are decided there, once.
    observeRequest: ((labels, ms) => requests.observe(labels, ms / 1000)) as OnRequest,
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
      "Requests answered 503 with Retry-After, by cause: the database gate did not admit their query, or the event loop was behind.",
      () => ({ db_gate: stats.shed - stats.shedEventLoop, event_loop: stats.shedEventLoop }),
      "cause",
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
