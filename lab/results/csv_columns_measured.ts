/**
 * What the measured columns of a results CSV mean (what the tool, the server, the database and the
 * simulation said), in the order of lab/results/csv.ts; lab/results/csv_columns.ts puts them after the plan's.
 */
import type { Column } from "./csv.ts";

export interface ColumnMeaning {
  columns: readonly Column[];
  meaning: string;
}

export const MEASURED_MEANINGS: readonly ColumnMeaning[] = [
  {
    columns: ["requests"],
    meaning: "requests the tool started (or scheduled), when it says",
  },
  {
    columns: ["list_targets"],
    meaning:
      "targets handed to the tool for the measured run: its segment of the attack's stream ([Honest " +
      "workloads](methodology.md#honest-workloads))",
  },
  {
    columns: ["targets_sent"],
    meaning: "requests the measured run sent, by the tool's own account",
  },
  {
    columns: ["target_reuse_ratio"],
    meaning:
      "of those, the share that re-sent a stream position already sent in the run (oha: the expectation for its " +
      "list); 0 for a fresh stream",
  },
  {
    columns: ["completed", "ok"],
    meaning: "requests answered with any HTTP status; with 2xx",
  },
  {
    columns: ["errors"],
    meaning: "non-2xx answers plus transport errors",
  },
  {
    columns: ["dropped"],
    meaning:
      "open models: iterations the tool dropped or requests aborted at the deadline (empty when the tool cannot " +
      "tell)",
  },
  {
    columns: ["shed", "shed_ratio"],
    meaning:
      "requests the server answered 503 (load shedding), by its own counter, and their share of " +
      "`server_requests`; checked against the tool's 503s. Errors unless the experiment measures shedding " +
      "(`sheddingExpected`)",
  },
  {
    columns: ["shed_event_loop"],
    meaning:
      "of `shed`, the requests answered 503 at once because the server's event loop was more than " +
      "MAX_EVENT_LOOP_DELAY_MS behind (the CPU, not the pool, was the limit; the rest the database gate shed). " +
      "Empty from a server without the counter",
  },
  {
    columns: ["status_counts", "error_counts"],
    meaning: "JSON: status \u2192 count; transport error message \u2192 count",
  },
  {
    columns: ["achieved_rps", "ok_rps"],
    meaning:
      "completed \u00f7 the send window; ok \u00f7 the send window (open models: the planned duration; vegeta: its " +
      "report's `duration`)",
  },
  {
    columns: ["drain_s"],
    meaning:
      "after the send window, how long the tool waited for the last responses (not counted against the rate; " +
      "empty: cannot tell)",
  },
  {
    columns: [
      "latency_min_ms",
      "latency_mean_ms",
      "latency_p50_ms",
      "latency_p90_ms",
      "latency_p95_ms",
      "latency_p99_ms",
      "latency_p99_9_ms",
      "latency_max_ms",
    ],
    meaning:
      "the tool's latency distribution in ms (empty where the tool has no such figure, e.g. autocannon p95)",
  },
  {
    columns: ["latency_ok_p50_ms", "latency_ok_p99_ms"],
    meaning:
      "the same, over 2xx responses only (vegeta and oha, from their per-request results; empty for the " +
      "others): with shedding, fast 503s would pull the overall percentiles down",
  },
  {
    columns: ["latency_resolution_ms"],
    meaning:
      'the smallest step the tool records (autocannon 1: its 0 means "< 1 ms", and the report prints it so)',
  },
  {
    columns: ["bytes_in"],
    meaning: "bytes received as the tool counts them (bodies or wire, see the tool table)",
  },
  {
    columns: ["server_requests"],
    meaning: "the server's `/stats` requests delta over the measured run (probes not included)",
  },
  {
    columns: ["distinct_keys", "distinct_keys_expected"],
    meaning:
      "distinct resources (ids, list pages) the server's reads asked for in the measured run; what a fresh " +
      "stream gives for the distinct positions sent (`targets_sent` less the re-sent ones)",
  },
  {
    columns: ["hit_ratio"],
    meaning:
      "the caches' own view: GETs answered without a database query \u00f7 GETs (writes are not misses; an early " +
      "refresh's background load answers no GET, so it is not one)",
  },
  {
    columns: ["hit_ratio_expected"],
    meaning:
      "the same key stream replayed through a model of the strategy's caches (`lab/sim/simulate.ts`); more than " +
      "0.02 away is invalid",
  },
  {
    columns: ["hit_ratio_optimal"],
    meaning:
      "Belady's MIN at the same capacity (local), the unbounded L2 with its TTL (redis, two_tier, tracking); empty for " +
      "`none`",
  },
  {
    columns: ["l1_hit_ratio_expected"],
    meaning:
      "the same simulation's share of lookups answered in process (`local`'s cache, two_tier's and tracking's L1), to set " +
      "beside `l1_hit_ratio`; empty for `none` and `redis`",
  },
  {
    columns: ["l1_hit_ratio", "l2_hit_ratio"],
    meaning:
      "per tier, from the strategy's counters: `local`/two_tier's and tracking's L1, and `redis`/their L2 (L2 sees only " +
      "L1's misses); lookups include list pages' generation tokens",
  },
  {
    columns: ["db_queries", "db_queries_source"],
    meaning:
      "queries on `products` during the measured run, and where the count came from (`pg_stat_statements`, or " +
      "`server_counter (\u2026why\u2026)`)",
  },
  {
    columns: ["db_load_ms_p50", "db_load_ms_p99", "db_load_ms_mean"],
    meaning:
      "what a miss cost: the workload's database loads in the measured run (detail, summary and list-page " +
      "queries merged, all instances; from the query sent to its rows back, the gate's wait not included; " +
      "probes and failed queries not timed), as the server timed them (`/stats.dbLoadMs` deltas: a log-bucketed " +
      "histogram, percentiles within 1%); empty when the server has no such timer or was reset during the run",
  },
  {
    columns: ["pg_exec_ms_mean"],
    meaning:
      "Postgres's mean execution time of the same read statements over the run (`pg_stat_statements`: \u03a3 " +
      "total_exec_time \u00f7 \u03a3 calls of the selects on `products`, probes' calls included); empty without the view. " +
      "A row whose `db_load_ms_mean` is below it by more than 5% + 10 \u00b5s is invalid: the server's time holds " +
      "the execution plus the round trip, so it cannot be shorter. Above it is the round trip and any queueing " +
      "(the two means side by side say how much)",
  },
  {
    columns: [
      "srv_mean_ms",
      "srv_l1_hit_count",
      "srv_l1_hit_mean_ms",
      "srv_l1_hit_p50_ms",
      "srv_l1_hit_p99_ms",
      "srv_l2_hit_count",
      "srv_l2_hit_mean_ms",
      "srv_l2_hit_p50_ms",
      "srv_l2_hit_p99_ms",
      "srv_miss_count",
      "srv_miss_mean_ms",
      "srv_miss_p50_ms",
      "srv_miss_p99_ms",
      "srv_join_count",
      "srv_join_mean_ms",
      "srv_join_p50_ms",
      "srv_join_p99_ms",
      "srv_write_count",
      "srv_write_mean_ms",
      "srv_write_p50_ms",
      "srv_write_p99_ms",
    ],
    meaning:
      "what each tier cost, as the server timed each request from its handler starting to its response being " +
      "ready (`/stats.requestMs` deltas, all instances, log-bucketed within 1%; [Tier costs](methodology.md#tier-costs)): " +
      "`l1_hit` an in-process hit (local, two_tier's and tracking's L1), `l2_hit` a Redis hit, `miss` a request that " +
      "waited on a database load it started (every read of `none`), `join` one that waited on a load another request " +
      "of its key had started (in process: the strategies load a key once at a time), `write` a PUT; `srv_mean_ms` " +
      "all five together. Rows from before joins were counted apart have no `srv_join_*`: their joins are in " +
      "`l2_hit` (redis, two_tier, tracking) or `miss` (local); the model reads `miss` and `join` together as a miss. The counts are every " +
      "request's (`/stats.requestCounts`); the times are of one request in TIER_TIMING (4 by default), chosen by " +
      "arrival. Neither HTTP nor the load tool is in them; probes are not. Empty when the server does not time " +
      "requests (TIER_TIMING=0)",
  },
  {
    columns: ["srv_l1_hit_hist", "srv_l2_hit_hist", "srv_miss_hist", "srv_join_hist", "srv_write_hist"],
    meaning:
      "each outcome's server-side times above as a histogram (lab/model/histogram.ts): the server's buckets " +
      "(ratio 1.02 from 0.001 ms) merged five to one, written as runs `start:c1,c2,…` of consecutive merged " +
      "buckets joined by `;` (bucket i stands for the harmonic mean of 0.001 × 1.02^(5i) and 0.001 × " +
      "1.02^(5i+5) ms), so a percentile read from it is within 5% of the server's; what the model mixes for a " +
      "p99. Empty when the outcome had no timed request, or the server does not time requests",
  },
  {
    columns: ["redis_cmd_count", "redis_cmd_mean_ms", "redis_cmd_p50_ms", "redis_cmd_p99_ms"],
    meaning:
      "each Redis command the strategy sent on the request path (GET, EVAL/EVALSHA, PUBLISH), timed alone from " +
      "sent to answered (failed commands not timed); 0 for none and local",
  },
  {
    columns: ["postgres_path_rtt_ms", "redis_path_rtt_ms"],
    meaning:
      "the round trip through the cell's Toxiproxy path to Postgres (`select 1`) and to Redis (PING), as " +
      "delivered: the median of pings sent every 20 ms beside the load by the lab (a proxied service only, in " +
      "an attack without faults; " +
      "empty when direct). Under load the path costs more than the idle probe (`*_base_ms`): a record of what the " +
      "cell's server got, never the model's input (it predicts from the plan's `miss_cost_added_ms` and " +
      "`redis_rtt_added_ms`, known before the cell runs)",
  },
  {
    columns: ["predicted_mean_ms", "predicted_p99_ms", "predicted_from", "predicted_reason"],
    meaning:
      "the model's server-side mean and p99 for this cell (lab/model/predict.ts; [the card](card.md)) and the cells " +
      "it took its tier costs from: the `<attack>_base` cells measured before it in the same run " +
      "(`--miss-cost-ms`, `--redis-rtt-ms`). Never this cell's own figures. Empty for a base cell and for runs " +
      "without base cells; `predicted_p99_ms` also empty where the model predicts no p99 (base cells without " +
      "`srv_*_hist`, or a setting outside the model). Both server-side, over every answered request, as `srv_mean_ms`. " +
      "`predicted_reason`: in a run with base cells, why this cell has no mean or no p99 (e.g. `outside the model: " +
      "the database pool saturates …`); empty when it has both",
  },

  {
    columns: ["instance_requests", "instance_db_queries"],
    meaning:
      "several instances: each one's requests and database queries, `/`-separated in instance order " +
      "(`5012/4988`), summing to `server_requests` and the server's query count; empty with one instance",
  },
  {
    columns: ["db_offload"],
    meaning: "1 \u2212 db_queries \u00f7 server_requests: the database-side figure, writes included",
  },
  {
    columns: ["cache_errors"],
    meaning:
      "Redis failures the strategy swallowed (answered from Postgres); > 0 is invalid unless the attack injects " +
      "faults (commands its open circuit breaker skipped are not errors)",
  },
  {
    columns: ["load_waits", "refresh_loads"],
    meaning:
      "requests whose answer waited on a database load (the one that started it and every joiner), and loads " +
      "started in the background by early refresh (nobody waited); from the strategy's counters",
  },
  {
    columns: ["loads_per_key_per_ttl"],
    meaning:
      "reads' database loads \u00f7 distinct keys across all instances \u00f7 the TTL periods in the run: \u2248 1 when every " +
      "hot key is loaded once per expiry in the whole deployment, \u2248 N when each of N instances loads it for " +
      "itself",
  },
  {
    columns: ["redis_evicted_keys"],
    meaning: "keys the lab's Redis evicted during the run (under a `redis_maxmemory`)",
  },
  {
    columns: ["redis_entries", "redis_bytes_per_entry"],
    meaning:
      "redis, two_tier and tracking: the keys under the lab's Redis prefix after the measured run, and the mean bytes Redis " +
      "counts per key (`MEMORY USAGE … SAMPLES 0`: key, value and dictionary entry, over up to 1 000 of them); " +
      "entries × bytes sizes a Redis for a key count of your own",
  },
  {
    columns: ["redis_tracking_items"],
    meaning:
      "redis, two_tier and tracking: Redis's CLIENT TRACKING table after the measured run (`INFO stats` " +
      "`tracking_total_items`: each key once per connection that read it and still tracks it; Redis keeps a " +
      "closed connection's items until their keys change, redis#13867, so earlier cells' may remain); it is " +
      "Redis memory `redis_bytes_per_entry` does not count (about 113 B an item, bench:memory)",
  },
  {
    columns: ["metrics_from_unix_s", "metrics_to_unix_s"],
    meaning:
      "with `--prometheus`: the times (Unix seconds) of the scrapes of every server just before the measured run " +
      "began and just after it ended, the lab idle in between: `X @ to - X @ from` of a /metrics counter is " +
      "exactly the measured run's (docs/metrics.md); empty without `--prometheus`",
  },
  {
    columns: ["stale_reads", "stale_checks", "stale_checks_failed"],
    meaning:
      "a checker beside the load: reads after an acknowledged PUT that returned an older version; checks " +
      "completed; checks that could not complete (> 0 is invalid)",
  },
  {
    columns: ["staleness_windows", "staleness_p50_ms", "staleness_p99_ms", "staleness_max_ms"],
    meaning:
      "the staleness checker (scale_out): how long after a write was acknowledged each other instance still " +
      "served the old row, one window per (check, reader), nearest-rank percentiles ([Several " +
      "instances](experiments.md#several-instances))",
  },
  {
    columns: ["staleness_bound_ms", "stale_beyond_bound"],
    meaning:
      "the strategy's stated bound plus the experiment's margin, and the readers still stale past it (> 0 is " +
      "invalid)",
  },
  {
    columns: ["stale_read_ratio"],
    meaning: "of the staleness checker's reads, the share that returned the old row",
  },
  {
    columns: ["fault_worst_p99_ms", "fault_failed", "fault_recovery_s"],
    meaning:
      "over the run's fault windows (from its timeline): the worst one-second p99, the requests failed during " +
      "them, and the most whole seconds after a window before the hit ratio was back within 5% of its level in " +
      "the 3 s before",
  },
  {
    columns: ["timeline_rows"],
    meaning: "seconds written for this run to `results/<experiment>.timeline.csv`",
  },
  {
    columns: ["server_cpu_s", "server_rss_peak_mb"],
    meaning:
      "the server process's CPU seconds during the measured run; its peak RSS (several instances: both summed " +
      "over them)",
  },
  {
    columns: ["loadgen_cpu_s"],
    meaning:
      "the load tool's CPU seconds: near `duration_s \u00d7 cores`, the generator (not the server) was the limit",
  },
  {
    columns: ["postgres_cpu_s", "redis_cpu_s"],
    meaning:
      "Postgres's CPU seconds during the measured run (the postmaster and every backend, from /proc; empty when " +
      "Postgres is not a process on this host) and Redis's (`INFO cpu`: used_cpu_sys + used_cpu_user)",
  },
  {
    columns: ["loadgen_cpu_per_s", "server_cpu_per_s", "postgres_cpu_per_s", "redis_cpu_per_s"],
    meaning:
      "the same four as CPU seconds per second of the measured run (`_cpu_s ÷ duration_s`): on a machine of " +
      "`cpu_count` cores, how the cores were shared between the load tool, the server(s) and the services",
  },
  {
    columns: ["other_cpu_per_s", "cpu_steal_per_s"],
    meaning:
      "cores the measured run shared: `other_cpu_per_s`, processes that are not the lab's (the machine's user " +
      "and system time from /proc/stat less the server's, the load tool's, Postgres's, Redis's, Toxiproxy's " +
      "and the lab's own); `cpu_steal_per_s`, time the hypervisor took (steal). Over a tenth of `cpu_count` " +
      "makes the row invalid (`CACHELAB_OTHER_CPU_LIMIT` sets another share, or `off`): a stray process makes a cell's repeats differ several-fold " +
      "([Sharing the machine](methodology.md#sharing-the-machine)). Empty where it cannot be told (a server, " +
      "Postgres or Redis on another host)",
  },
  {
    columns: ["valid", "invalid_reason"],
    meaning: "see above",
  },
  {
    columns: ["warnings"],
    meaning:
      "what a valid row should be read with, `; `-separated: the load tool used more than half the machine's " +
      "CPU (`loadgen_cpu_per_s` > `cpu_count` ÷ 2), so client-side latencies include queueing behind it; in a " +
      "step a search chose at run time ([Steps chosen at run time](experiments.md#experiments)), its verdict: " +
      "`capacity step pool at 372 rps held: p99 41.20 ms ≤ 100 ms` or `… broke: …` (capacity_check). A warning " +
      "never makes a row invalid",
  },
  {
    columns: ["git_sha", "git_dirty"],
    meaning: "the commit measured, and whether tracked files had uncommitted changes",
  },
  {
    columns: ["bun_version", "postgres_version", "redis_server", "redis_version", "services_mode"],
    meaning:
      "versions, and how the services were provided (`external`, `native`, `docker`); `redis_server` is the " +
      "server every Redis tier ran on, as it names itself: `redis`, or `valkey` on a `--redis-server valkey` " +
      "run, whose `redis_version` is then Valkey's own (`9.1.2`), not the Redis version Valkey reports for " +
      "compatibility (`7.2.4`). A CSV written before the column reads as `redis`",
  },
  {
    columns: ["os", "kernel", "arch", "cpu_model", "cpu_count", "mem_total_gb"],
    meaning: "the machine (cpu_count is the cgroup limit when there is one)",
  },
  {
    columns: ["raw_path"],
    meaning: "where the raw tool output is",
  },
];
