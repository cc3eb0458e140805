/**
 * What each results-CSV column means, in groups that share a meaning: docs/csv.md's table is generated
 * from this list (`bun scripts/docs.ts`), and a test fails when a column has no meaning or two.
 */
import { type ColumnMeaning, MEASURED_MEANINGS } from "./csv_columns_measured.ts";

export type { ColumnMeaning };

/** What the plan's columns mean (the cell, the load, the keys, the server's settings), then the measured ones. */
const PLAN_MEANINGS: readonly ColumnMeaning[] = [
  {
    columns: ["run_id", "started_at_utc"],
    meaning: "one id per `bun run experiment` invocation; its start time (UTC, ISO 8601)",
  },
  {
    columns: ["experiment", "attack", "strategy", "repeat"],
    meaning:
      "the cell; `bun run attack --csv` rows have `experiment` = `attack`, `attack` = `run` or `k6-operator " +
      "import`, and the strategy of the cachelab server attacked (else empty)",
  },
  {
    columns: ["tool", "tool_version"],
    meaning: "the load tool and its exact version",
  },
  {
    columns: ["load_model"],
    meaning: "`open` (fixed arrival rate), `ramping` or `closed` (fixed connections)",
  },
  {
    columns: ["offered_rps"],
    meaning: "open/ramping: the rate asked for (ramping: mean over stages); closed: empty",
  },
  {
    columns: ["connections"],
    meaning: "closed: the connections; open: the most connections/VUs the tool could open",
  },
  {
    columns: ["duration_s", "warmup_s", "timeout_s"],
    meaning: "measured seconds, warm-up seconds, per-request timeout",
  },
  {
    columns: ["request_mix"],
    meaning: "`name:weight:METHOD path` per template, `\\ | `-separated",
  },
  {
    columns: ["key_distribution", "key_params", "keyspace", "key_seed"],
    meaning:
      "`uniform`/`zipf`/`hotspot`/`sequential`/`trace`, its parameters (`exponent=1.1`; a trace: " +
      "`file=\u2026;format=\u2026`), ids 1..keyspace, the target seed",
  },
  {
    columns: ["trace_order", "trace_skipped_lines"],
    meaning:
      "a trace row: how it was sent (`in order`), and the lines that were not requests (unmatched by `--route`, " +
      "or bad under `--skip-bad-lines`); empty without a trace",
  },
  {
    columns: [
      "trace_requests",
      "trace_keys",
      "trace_write_share",
      "trace_one_hit_wonder_ratio",
      "trace_compulsory_miss_ratio",
      "trace_zipf_alpha",
      "trace_working_set_bytes",
      "trace_value_p50_bytes",
      "trace_value_p99_bytes",
      "trace_reuse_distance_median",
    ],
    meaning:
      "the whole trace's statistics ([docs/trace_statistics.md](trace_statistics.md)): requests, distinct keys, " +
      "writes and deletes \u00f7 requests, keys requested once \u00f7 keys, keys \u00f7 requests, the fitted Zipf alpha (least " +
      "squares, ranks with frequency \u2265 2), \u03a3 last size per key, value-size percentiles (nearest rank), median " +
      "reuse distance; empty where the trace does not say",
  },
  {
    columns: ["seeded_rows", "seed", "description_bytes", "reviews_per_product", "payload_bytes"],
    meaning:
      "the seed plan the database held for the attack (the experiment's, or the attack's own `seed`): rows, " +
      "seed, description length, reviews of each product ([Seed](seed.md#seed)), and the payload size profile " +
      "as the seed meta records it (`fixed 2000`, `per-id n=\u2026 p50=\u2026 p99=\u2026 max=\u2026 sha256=\u2026`; empty: every " +
      "description `description_bytes` long)",
  },
  {
    columns: ["db_settle_s", "vacuum_wait_s", "db_settled"],
    meaning:
      "the database settled right before the cell ([Settling](methodology.md#settling-the-database)): seconds " +
      "spent on it (`VACUUM ANALYZE` of products and reviews and a `CHECKPOINT` when the rows were seeded since " +
      "the lab last vacuumed them, then the wait), of which seconds waiting for a VACUUM on the lab's database " +
      "(an autovacuum worker's or another session's, at most 30 s); `db_settled` false when that VACUUM still " +
      "ran at the bound or Postgres refused the VACUUM or the CHECKPOINT. 0 and 0: nothing to do (settled " +
      "before an earlier cell, nothing running). Empty in rows from before these columns, in a cell that " +
      "crashed, and in `bun run attack --csv` rows",
  },
  {
    columns: ["topology", "loadgen_hosts"],
    meaning:
      "where the server and the load ran: `one host: server, services and load tool on loopback`; the server " +
      "and services on the machine's namespace and N load-generator hosts (network namespaces, one generator " +
      "each) ([Several generators, several hosts](services.md#several-generators-several-hosts)); `server on a " +
      "host of its own (\u2026)` ([The server on a host of its own](services.md#the-server-on-a-host-of-its-own)); a " +
      "`remote server the lab did not start` with the machine it reports ([A server the lab did not " +
      "start](services.md#a-server-the-lab-did-not-start)); `k6 operator: N runner pods \u2026` (an import). Then N, " +
      "the generators apart from the server",
  },
  {
    columns: ["instances"],
    meaning:
      "server processes of the strategy in the cell, each on its own port, sharing Postgres and Redis; the " +
      "stream is dealt round-robin over them ([Several instances](experiments.md#several-instances))",
  },
  {
    columns: ["pg_pool_max", "cache_ttl_ms", "l1_ttl_ms", "l1_max_entries"],
    meaning: "server settings, per instance (empty where the strategy has no such thing)",
  },
  {
    columns: ["pg_queue_max", "pg_acquire_timeout_ms"],
    meaning:
      "load shedding: requests that may wait for a database slot, and for how long, before a 503 (0: unbounded, " +
      "today's default)",
  },
  {
    columns: ["max_event_loop_delay_ms"],
    meaning:
      "load shedding on CPU: the event-loop delay past which the server answers /products requests 503 at " +
      "once (0: never, the lab's default unless the experiment sets it; the server's own default is 50)",
  },
  {
    columns: ["early_refresh_beta"],
    meaning: "XFetch early refresh's \u03b2 in the caching strategies (0: off)",
  },
  {
    columns: ["server_cpu_limit"],
    meaning:
      "the server process's CPU limit as applied, with its method (`0.5 CPU (cgroup v1 cfs quota \u2026)` or " +
      "`taskset`); empty: none",
  },
  {
    columns: ["redis_maxmemory"],
    meaning:
      "the lab's Redis `maxmemory` and policy during the cell, set for it, or found in force and marked " +
      "`(found, not set by this run)` (a killed run's limit; the run also warns); empty: unlimited",
  },
  {
    columns: ["redis_client"],
    meaning:
      "the Redis client as the server described it in `/stats` (what it negotiated, not what the lab assumed): " +
      "client and version, the protocol, server and version Redis answered HELLO with (`resp3 redis=7.0.15`, " +
      "`resp3 valkey=9.1.2`), auto-pipelining, command " +
      "timeout, offline queue, reconnects, circuit breaker (failures to open / cool-down)",
  },
  {
    columns: ["pg_driver"],
    meaning:
      "the Postgres driver the server reported, with its version and the lab's patch of it: `postgres.js 3.4.9 + " +
      "patches/postgres@3.4.9.patch (drizzle named prepared statements)` (rows from before the patch name none: " +
      "their pool slowed with every query, docs/benchmarks.md) or `Bun.SQL (bun 1.4.4, prepare=true; drizzle bun-sql)`",
  },
  {
    columns: ["redis_path", "postgres_path"],
    meaning:
      "how the server reached each service: `direct`, or `toxiproxy` with what the path adds (`toxiproxy +0.25 " +
      "ms each way`, `\u2026 1000 KB/s each way`)",
  },
  {
    columns: ["miss_cost_ms", "redis_rtt_ms"],
    meaning:
      "the figure asked, absolute: `--miss-cost-ms` (what a miss costs the user, one database load as their " +
      "application sees it) and `--redis-rtt-ms` (their Redis round trip, as `redis-cli --latency` reports it) " +
      "([Miss cost and distance from the command line](methodology.md#miss-cost-and-distance-from-the-command-line)); " +
      "empty without the flag, in a base twin (`<attack>_base`: nothing asked of it) and in `bun run attack` " +
      "rows. In a CSV without `miss_cost_added_ms` (before the lab measured its own) they held the round trip " +
      "added, as `*_added_ms` do now; summaries and comparisons label such a value `(added)`",
  },
  {
    columns: ["miss_cost_base_ms", "redis_rtt_base_ms"],
    meaning:
      "the lab's own, measured once per run before the first cell through proxies made as the cells' with " +
      "nothing added (lab/cell/idle_probe.ts): the median of 200 sequential executions of the server's detail " +
      "query (what `GET /products/{id}` runs on a miss, prepared, on postgres.js) and of 200 Redis PINGs, to " +
      "the µs. In every row whose cell proxies the service, with or without a flag; empty when direct",
  },
  {
    columns: ["miss_cost_added_ms", "redis_rtt_added_ms"],
    meaning:
      "the round trip Toxiproxy added to every Postgres / Redis command in the cell, in all: twice the latency " +
      "each way on its path, that is the distance the attack declares plus, for a figure asked, the figure " +
      "less the base (to the µs); 0 in a base twin or through the proxy with nothing declared; jitter and a " +
      "bandwidth cap are not in it (the path says them); empty when direct and in `bun run attack` rows",
  },
  {
    columns: ["faults"],
    meaning:
      "the attack's faults as planned, e.g. `redis down at 6 s for 5 s; redis hang at 16 s for 5 s`; empty when " +
      "none",
  },
];

export const COLUMN_MEANINGS: readonly ColumnMeaning[] = [...PLAN_MEANINGS, ...MEASURED_MEANINGS];
