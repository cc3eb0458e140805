/** What the report tests share: results rows of a read-heavy run, and a Redis outage with its timeline seconds. */
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { COLUMNS } from "./csv.ts";
import { CURVE_METHODS, type CurveRow } from "./curves_csv.ts";
import type { ResultRow } from "./summary.ts";
import type { TimelineRow } from "./timeline.ts";

export const ARTIFACTS = join(REPO_ROOT, "artifacts");

export function row(overrides: Partial<Record<string, string | number | boolean | null>>): ResultRow {
  const base: ResultRow = Object.fromEntries(COLUMNS.map((column) => [column, null]));
  return {
    ...base,
    experiment: "read_heavy",
    attack: "zipf_reads",
    tool: "vegeta",
    tool_version: "12.13.0",
    load_model: "open",
    offered_rps: 1_000,
    connections: 256,
    duration_s: 10,
    request_mix: "detail:1:GET /products/{id}",
    key_distribution: "zipf",
    key_params: "exponent=1.1",
    keyspace: 100_000,
    valid: true,
    completed: 10_000,
    ok: 10_000,
    errors: 0,
    achieved_rps: 1_000,
    latency_p50_ms: 1,
    latency_p90_ms: 2,
    latency_p99_ms: 5,
    latency_p99_9_ms: 9,
    hit_ratio: 0,
    db_queries: 10_000,
    cpu_model: "Xeon",
    cpu_count: 2,
    os: "Debian 12",
    bun_version: "1.4.4",
    ...overrides,
  };
}

/** Three repeats of none and local, one invalid local row. */
export function rows(): ResultRow[] {
  return [
    row({ strategy: "none", repeat: 1, latency_p99_ms: 4, db_queries: 10_000 }),
    row({ strategy: "none", repeat: 2, latency_p99_ms: 6, db_queries: 10_000 }),
    row({ strategy: "none", repeat: 3, latency_p99_ms: 5, db_queries: 10_000 }),
    row({
      strategy: "local",
      repeat: 1,
      latency_p99_ms: 2,
      hit_ratio: 0.9,
      db_queries: 1_000,
      achieved_rps: 990,
    }),
    row({
      strategy: "local",
      repeat: 2,
      latency_p99_ms: 1,
      hit_ratio: 0.92,
      db_queries: 800,
      achieved_rps: 1_000,
    }),
    row({
      strategy: "local",
      repeat: 3,
      valid: false,
      invalid_reason: "dropped load: achieved 500",
      achieved_rps: 500,
    }),
  ];
}

export const RUN_ID = "20260101T000000-abcd1234";
export const START_EPOCH_S = 1_767_225_600;
export const DOWN = [5, 6, 7, 8, 9];
export const HANG = [20, 21, 22, 23];

/**
 * A redis outage as a 30-second timeline: Redis down at seconds 5–9 and restarted empty (the hit ratio climbs
 * back over four seconds), then hanging at 20–23 (it accepts commands and answers none: p99 climbs towards
 * the command timeout, and vegeta times requests out). Steady seconds jitter 0.79/0.80/0.81 around 0.80.
 * two_tier's L1 keeps answering through both; wrk gives no per-second account, so only the server's counters.
 */
export function outage(
  strategy: "redis" | "two_tier",
  options: { repeat?: number; tool?: "vegeta" | "wrk" } = {},
) {
  const tool = options.tool ?? "vegeta";
  const climb: Record<number, number> = { 10: 0.45, 11: 0.62, 12: 0.71, 13: 0.78 };
  const hangP99: Record<number, number> = { 20: 40, 21: 180, 22: 500, 23: 510 };
  const hangFailed: Record<number, number> = { 20: 10, 21: 70, 22: 130, 23: 120 };
  const downP99: Record<number, number> = { 5: 3.1, 6: 4.8, 7: 2.2, 8: 2, 9: 2.4 };
  const downFailed: Record<number, number> = { 5: 2, 6: 5 };
  return Array.from({ length: 30 }, (_, s): TimelineRow => {
    const down = DOWN.includes(s);
    const hang = HANG.includes(s);
    const steady = [0.79, 0.8, 0.81][s % 3] as number;
    // The Redis tier's ratio of its own lookups (two_tier's L2 sees only L1's misses).
    const l2 = down || hang ? 0 : strategy === "redis" ? (climb[s] ?? steady) : 1 / 3;
    const l2Lookups = strategy === "redis" ? 1_000 : 300;
    const failed = down ? (downFailed[s] ?? 0) : hang ? (strategy === "redis" ? (hangFailed[s] ?? 0) : 0) : 0;
    const p99 = down ? (downP99[s] ?? 2) : hang ? (hangP99[s] ?? 1.6) : 1.5 + (s % 3) * 0.05;
    const served = tool === "wrk" ? (hang ? 900 : 24_000) : 1_000;
    return {
      run_id: RUN_ID,
      experiment: "redis_outage",
      strategy,
      tool,
      attack: "zipf_reads",
      repeat: options.repeat ?? 1,
      second: s,
      epoch_s: START_EPOCH_S + s,
      sent: tool === "wrk" ? null : 1_000,
      ok: tool === "wrk" ? null : 1_000 - failed,
      errors: tool === "wrk" ? null : failed,
      p50_ms: tool === "wrk" ? null : down ? 0.9 : 0.24,
      p99_ms: tool === "wrk" ? null : p99,
      timeline_source: tool === "wrk" ? "none (wrk): server counters only" : "vegeta per-request results",
      server_requests: served,
      server_reads: served,
      l1_hits: strategy === "two_tier" ? 700 : null,
      l1_misses: strategy === "two_tier" ? 300 : null,
      l2_hits: Math.round(l2 * l2Lookups),
      l2_misses: l2Lookups - Math.round(l2 * l2Lookups),
      db_queries: Math.round((1 - l2) * l2Lookups),
      // Reads without a database query: two_tier's L1 answers 700 of its 1 000 whatever Redis does.
      hit_ratio: 1 - Math.round((1 - l2) * l2Lookups) / 1_000,
      cache_errors: down || hang ? l2Lookups : 0,
      faults: down ? "redis down" : hang ? "redis hang" : "",
    };
  });
}

/** The results rows of the outage runs: redis × 2 repeats and two_tier on vegeta, redis on wrk. */
export function outageRows(): ResultRow[] {
  const base = { experiment: "redis_outage", attack: "zipf_reads", run_id: RUN_ID, cache_errors: 5_000 };
  const wrk = {
    tool: "wrk",
    tool_version: "4.2.0",
    load_model: "closed",
    offered_rps: null,
    connections: 32,
  };
  return [
    row({ ...base, strategy: "redis", repeat: 1 }),
    row({ ...base, strategy: "two_tier", repeat: 1 }),
    row({ ...base, strategy: "redis", repeat: 2 }),
    row({ ...base, ...wrk, strategy: "redis", repeat: 1 }),
  ];
}

export function outageTimeline(): TimelineRow[] {
  return [
    ...outage("redis"),
    ...outage("two_tier"),
    ...outage("redis", { repeat: 2 }),
    ...outage("redis", { tool: "wrk" }),
  ];
}

export const TRACE_RUN_ID = "20260102T000000-trace001";

/** A trace run of your_workload: one row per strategy, with the trace's columns and l1_max_entries 150. */
export function traceRows(): ResultRow[] {
  const base = {
    experiment: "your_workload",
    attack: "replay",
    run_id: TRACE_RUN_ID,
    repeat: 1,
    key_distribution: "trace",
    key_params: "file=experiments/traces/sample.csv.gz;format=csv",
    keyspace: null,
    trace_order: "in order",
    trace_skipped_lines: 0,
    trace_requests: 40_000,
    trace_keys: 11_231,
    trace_write_share: 0.037,
    trace_one_hit_wonder_ratio: 0.578,
    trace_compulsory_miss_ratio: 0.281,
    trace_zipf_alpha: 0.774,
    trace_working_set_bytes: 13_168_554,
    trace_value_p50_bytes: 640,
    trace_value_p99_bytes: 6_753,
    trace_reuse_distance_median: 50,
  };
  return [
    row({ ...base, strategy: "none", hit_ratio: 0 }),
    row({ ...base, strategy: "local", hit_ratio: 0.412, hit_ratio_expected: 0.41, l1_max_entries: 150 }),
    row({ ...base, strategy: "two_tier", hit_ratio: 0.47, l1_max_entries: 150 }),
    row({ ...base, strategy: "redis", hit_ratio: 0.52 }),
  ];
}

/**
 * The replayed curves of traceRows' run at 1%, the configured 150 and 100% of 1 500 keys: lru, local and belady
 * (a file written before the eviction policies), or with `policies` the four policies too.
 */
export function traceCurves(options: { policies?: boolean } = {}): CurveRow[] {
  const capacities: [string, number, boolean][] = [
    ["1%", 15, false],
    ["150", 150, true],
    ["100%", 1_500, false],
  ];
  const ratios = {
    lru: [0.2, 0.39, 0.55],
    local: [0.22, 0.411, 0.55],
    belady: [0.3, 0.48, 0.55],
    sieve: [0.21, 0.4, 0.55],
    s3fifo: [0.24, 0.45, 0.55],
    wtinylfu: [0.19, 0.43, 0.55],
    arc: [0.21, 0.42, 0.55],
  };
  const methods = options.policies
    ? CURVE_METHODS
    : (["lru", "local", "belady"] as const satisfies readonly CurveRow["method"][]);
  return methods.flatMap((method) =>
    capacities.map(([label, entries, configured], i) => ({
      run_id: TRACE_RUN_ID,
      experiment: "your_workload",
      attack: "replay",
      method,
      capacity_entries: entries,
      capacity_label: label,
      configured,
      hit_ratio: ratios[method][i] as number,
      byte_hit_ratio: method === "belady" ? null : (ratios[method][i] as number) - 0.01,
      reads: 14_321,
      warmup_requests: 5_000,
      from_position: 5_066,
      to_position: 20_066,
    })),
  );
}

/**
 * The four strategies, three repeats each, with the columns the decision card reads; `attack` and
 * `redis_path`/`postgres_path` (and none's miss cost) let a test build network_rtt-like siblings.
 */
export function cardRows(
  overrides: { attack?: string; path?: string; addedMs?: number; experiment?: string } = {},
): ResultRow[] {
  const added = overrides.addedMs ?? 0;
  const shared = {
    experiment: overrides.experiment ?? "read_heavy",
    attack: overrides.attack ?? "zipf_reads",
    redis_path: overrides.path ?? "direct",
    postgres_path: overrides.path ?? "direct",
    instances: 1,
    server_requests: 10_000,
    cache_ttl_ms: 60_000,
  };
  // p50, p99, mean per repeat; hit ratio; DB queries; CPU s; RSS MB; miss cost ms.
  const plan: [string, number, number, number, number, number, number, number][] = [
    ["none", 3 + added, 20 + added, 4 + added, 0, 10_000, 2, 80],
    ["local", 1, 8, 1.5, 0.9, 1_000, 1.2, 90],
    ["redis", 2 + added, 12 + added, 2.6 + added, 0.9, 1_000, 1.6, 95],
    ["two_tier", 1.05, 8.05, 1.6, 0.9, 1_000, 1.3, 110],
  ];
  return plan.flatMap(([strategy, p50, p99, mean, hit, queries, cpuS, rss]) =>
    [1, 2, 3].map((repeat) =>
      row({
        ...shared,
        strategy,
        repeat,
        latency_p50_ms: p50 + (repeat - 2) * 0.01,
        latency_p99_ms: p99 + (repeat - 2) * 0.1,
        latency_mean_ms: mean,
        hit_ratio: hit,
        hit_ratio_expected: hit,
        l1_hit_ratio: strategy === "local" || strategy === "two_tier" ? hit : null,
        db_queries: queries,
        server_cpu_s: cpuS,
        server_rss_peak_mb: rss,
        shed: "0",
        db_load_ms_p50: strategy === "none" ? 0.5 + added : null,
      }),
    ),
  );
}
