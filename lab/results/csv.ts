/**
 * Append-only CSV results: a header row, RFC 4180 quoting (csv-stringify), one row per cell written with a
 * single O_APPEND write so concurrent runs never interleave partial lines. A file whose header differs from
 * the current schema is never appended to: the row goes to the next versioned file (`x.v2.csv`, …).
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { stringify } from "csv-stringify/sync";

/** Every column, in order. Units are in the names; lab/results/csv_columns.ts gives each its meaning. */
export const COLUMNS = [
  "run_id",
  "started_at_utc",
  "experiment",
  "attack",
  "strategy",
  "repeat",
  "tool",
  "tool_version",
  "load_model",
  "offered_rps",
  "connections",
  "duration_s",
  "warmup_s",
  "timeout_s",
  "request_mix",
  "key_distribution",
  "key_params",
  "keyspace",
  "key_seed",
  "trace_order",
  "trace_skipped_lines",
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
  "seeded_rows",
  "seed",
  "description_bytes",
  "reviews_per_product",
  "payload_bytes",
  "db_settle_s",
  "vacuum_wait_s",
  "db_settled",
  "topology",
  "loadgen_hosts",
  "instances",
  "pg_driver",
  "pg_pool_max",
  "pg_queue_max",
  "pg_acquire_timeout_ms",
  "max_event_loop_delay_ms",
  "cache_ttl_ms",
  "l1_ttl_ms",
  "l1_max_entries",
  "early_refresh_beta",
  "server_cpu_limit",
  "redis_maxmemory",
  "redis_client",
  "redis_path",
  "postgres_path",
  "miss_cost_ms",
  "miss_cost_base_ms",
  "miss_cost_added_ms",
  "redis_rtt_ms",
  "redis_rtt_base_ms",
  "redis_rtt_added_ms",
  "faults",
  "requests",
  "list_targets",
  "targets_sent",
  "target_reuse_ratio",
  "completed",
  "ok",
  "errors",
  "dropped",
  "shed",
  "shed_ratio",
  "shed_event_loop",
  "status_counts",
  "error_counts",
  "achieved_rps",
  "ok_rps",
  "drain_s",
  "latency_min_ms",
  "latency_mean_ms",
  "latency_p50_ms",
  "latency_p90_ms",
  "latency_p95_ms",
  "latency_p99_ms",
  "latency_p99_9_ms",
  "latency_max_ms",
  "latency_ok_p50_ms",
  "latency_ok_p99_ms",
  "latency_resolution_ms",
  "bytes_in",
  "server_requests",
  "distinct_keys",
  "distinct_keys_expected",
  "hit_ratio",
  "hit_ratio_expected",
  "hit_ratio_optimal",
  "l1_hit_ratio_expected",
  "l1_hit_ratio",
  "l2_hit_ratio",
  "db_queries",
  "db_queries_source",
  "db_load_ms_p50",
  "db_load_ms_p99",
  "db_load_ms_mean",
  "pg_exec_ms_mean",
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
  "srv_l1_hit_hist",
  "srv_l2_hit_hist",
  "srv_miss_hist",
  "srv_join_hist",
  "srv_write_hist",
  "redis_cmd_count",
  "redis_cmd_mean_ms",
  "redis_cmd_p50_ms",
  "redis_cmd_p99_ms",
  "postgres_path_rtt_ms",
  "redis_path_rtt_ms",
  "predicted_mean_ms",
  "predicted_p99_ms",
  "predicted_from",
  "predicted_reason",
  "instance_requests",
  "instance_db_queries",
  "db_offload",
  "cache_errors",
  "load_waits",
  "refresh_loads",
  "loads_per_key_per_ttl",
  "redis_evicted_keys",
  "redis_entries",
  "redis_bytes_per_entry",
  "redis_tracking_items",
  "metrics_from_unix_s",
  "metrics_to_unix_s",
  "stale_reads",
  "stale_checks",
  "stale_checks_failed",
  "staleness_windows",
  "staleness_p50_ms",
  "staleness_p99_ms",
  "staleness_max_ms",
  "staleness_bound_ms",
  "stale_beyond_bound",
  "stale_read_ratio",
  "fault_worst_p99_ms",
  "fault_failed",
  "fault_recovery_s",
  "timeline_rows",
  "server_cpu_s",
  "server_rss_peak_mb",
  "loadgen_cpu_s",
  "postgres_cpu_s",
  "redis_cpu_s",
  "loadgen_cpu_per_s",
  "server_cpu_per_s",
  "postgres_cpu_per_s",
  "redis_cpu_per_s",
  "other_cpu_per_s",
  "cpu_steal_per_s",
  "valid",
  "invalid_reason",
  "warnings",
  "git_sha",
  "git_dirty",
  "bun_version",
  "postgres_version",
  "redis_server",
  "redis_version",
  "services_mode",
  "os",
  "kernel",
  "arch",
  "cpu_model",
  "cpu_count",
  "mem_total_gb",
  "raw_path",
] as const;

export type Column = (typeof COLUMNS)[number];

/** A run's `run_id`: its start to the second (UTC, `20261201T065901`) and 8 random hex digits. */
export function newRunId(startedAt: Date = new Date()): string {
  return `${startedAt.toISOString().replace(/[-:]/g, "").slice(0, 15)}-${crypto.randomUUID().slice(0, 8)}`;
}
export type CsvValue = string | number | boolean | null;
export type CsvRow = Record<Column, CsvValue>;

const HEADER = stringify([COLUMNS as unknown as string[]]);

/** One row as CSV text with its newline; null is an empty field, booleans are true/false. */
export function formatRow(row: CsvRow): string {
  return stringify([COLUMNS.map((column) => row[column])], {
    cast: { boolean: (value) => (value ? "true" : "false") },
  });
}

/** The first line of `path` with its newline (at most 64 KiB read). */
export function firstLine(path: string): string {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const bytes = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, bytes).toString("utf8");
    const end = text.indexOf("\n");
    return end === -1 ? text : text.slice(0, end + 1);
  } finally {
    closeSync(fd);
  }
}

/**
 * The file rows for `path` go to: `path` itself when it is new or has the current header, else the first
 * `name.vN.csv` that is new or current. `notice` says when it is not `path`.
 */
export function resolveCsvPath(path: string): { path: string; notice: string | null } {
  const stem = basename(path).replace(/\.csv$/, "");
  for (let version = 1; ; version++) {
    const candidate = version === 1 ? path : join(dirname(path), `${stem}.v${version}.csv`);
    if (!existsSync(candidate) || firstLine(candidate) === HEADER) {
      const notice =
        version === 1
          ? null
          : `${path} has another column layout (an older cachelab): writing to ${candidate} instead; old rows are kept as they are`;
      return { path: candidate, notice };
    }
  }
}

/** Creates `path` holding only `header` unless it exists (its directory too); concurrent callers are safe. */
export function createWithHeader(path: string, header: string): void {
  mkdirSync(dirname(path), { recursive: true });
  if (existsSync(path)) return;
  // The header is written to a private file and linked into place: link(2) creates the name with its
  // whole content at once, so a concurrent writer never reads a file that exists but is still empty.
  const staging = `${path}.${process.pid}.${crypto.randomUUID().slice(0, 8)}.header`;
  writeFileSync(staging, header, { flag: "wx" });
  try {
    linkSync(staging, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    unlinkSync(staging);
  }
}

/** How long a size must stay put before a line without its newline counts as cut short, not still being written. */
const SETTLE_MS = 10;

/**
 * What to put before an appended line: a newline when the file does not end in one (a write cut short,
 * e.g. by a full disk), so the partial line stays a lone malformed row and the new one starts its own line.
 */
export function lineStart(path: string): string {
  const fd = openSync(path, "r");
  try {
    const last = Buffer.alloc(1);
    let previousSize = -1;
    for (;;) {
      const { size } = fstatSync(fd);
      if (size === 0) return "";
      readSync(fd, last, 0, 1, size - 1);
      if (last[0] === 0x0a) return "";
      // A concurrent writer's row shows while the kernel copies it in (the size grows page by page): only a
      // size that stays put is a cut write. A writer stalled longer leaves at worst an empty line (skipped).
      if (size === previousSize) return "\n";
      previousSize = size;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, SETTLE_MS);
    }
  } finally {
    closeSync(fd);
  }
}

/** Appends one complete row (header first if the file is new) with one write call. */
export function appendRow(path: string, row: CsvRow): void {
  createWithHeader(path, HEADER);
  if (firstLine(path) !== HEADER) {
    throw new Error(
      `Cannot append to ${path}: its header is not the current schema (use resolveCsvPath first)`,
    );
  }
  appendFileSync(path, lineStart(path) + formatRow(row));
}
