/** One CSV row per cell: the plan's parameters, the tool's result, the server's deltas, and the machine. */
import { describePayload } from "../../seed/payload.ts";
import type { IdleBase } from "../cell/idle_probe.ts";
import type { OtherCpu } from "../cell/other_cpu.ts";
import type { ServerTiming } from "../cell/server_timing.ts";
import { settleColumns } from "../cell/settle.ts";
import { describeFaults, describePath } from "../faults/network.ts";
import type { Detection, Tool } from "../load/tool.ts";
import type { AttackPlan, KeyDistribution, NormalizedResult } from "../plan/attack_plan.ts";
import { type Experiment, type ExperimentAttack, seedFor } from "../plan/experiment_plan.ts";
import type { AskedRoundTrips } from "../plan/overrides.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import type { Services } from "../services/lifecycle.ts";
import { traceColumns } from "../trace/trace_columns.ts";
import type { CsvRow } from "./csv.ts";
import type { Machine } from "./machine.ts";
import { pgDriverDescription } from "./pg_driver.ts";
import { cpuColumns, roundTripColumns, tierColumns, warningsOf } from "./row_costs.ts";

/** How long readers on other instances saw the old row after a write, as the row reports it. */
export interface Staleness {
  windows: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** The strategy's stated bound plus the experiment's margin. */
  limitMs: number;
  beyondBound: number;
  /** Of the checker's reads, the share that returned the old row. */
  staleReadRatio: number | null;
}

/** What a measured attack produced besides the tool's result. */
export interface Measured {
  result: NormalizedResult | null;
  /** Targets handed to the tool for the measured run, how many it sent, and the share it re-sent. */
  listTargets: number | null;
  targetsSent: number | null;
  targetReuseRatio: number | null;
  serverRequests: number | null;
  distinctKeys: number | null;
  distinctKeysExpected: number | null;
  hitRatio: number | null;
  hitRatioExpected: number | null;
  hitRatioOptimal: number | null;
  /** The simulation's share of lookups answered in process (local, two_tier's and tracking's L1). */
  l1HitRatioExpected?: number | null;
  l1HitRatio: number | null;
  l2HitRatio: number | null;
  dbQueries: number | null;
  dbQueriesSource: string | null;
  /** The workload's database loads as the server timed them (all instances), or null. */
  dbLoadMs?: { p50Ms: number | null; p99Ms: number | null; meanMs: number | null } | null;
  /** Postgres's mean execution time of the read statements over the run (pg_stat_statements), or null. */
  pgExecMeanMs?: number | null;
  dbOffload: number | null;
  cacheErrors: number | null;
  /** Requests answered 503 by the server's load shedding, from its own counter. */
  shed: number | null;
  /** Of `shed`, those answered 503 at once because the server's event loop was behind. */
  shedEventLoop: number | null;
  /** Requests whose answer waited on a database load; loads started by early refresh (nobody waited). */
  loadWaits: number | null;
  refreshLoads: number | null;
  /** Database loads of reads per distinct key per cache TTL period of the run. */
  loadsPerKeyPerTtl: number | null;
  /** Keys the lab's Redis evicted under its maxmemory during the run. */
  redisEvictedKeys: number | null;
  /** The entries under the lab's Redis prefix after the run, and Redis's own bytes per entry (Redis strategies). */
  redisEntries?: number | null;
  redisTrackingItems?: number | null;
  redisBytesPerEntry?: number | null;
  /** With `--prometheus`: the scrapes just before and just after the measured run (Unix seconds). */
  metricsWindow?: { fromS: number; toS: number } | null;
  /** The server's CPU limit as applied (method and quota), or null. */
  serverCpuLimit: string | null;
  /** The Postgres driver the server reported in /stats (null: it never answered; the planned one is used). */
  pgDriver?: string | null;
  /** The Redis client as the server described it in /stats (what it negotiated), or null. */
  redisClient?: string | null;
  /** Where the server and the load ran (see lab/run/run_experiment.ts), and the load-generator hosts (0: none apart). */
  topology?: string;
  loadgenHosts?: number;
  /** Server processes that served the attack; per-instance requests and DB queries ("a/b"), null with one. */
  instances?: number;
  instanceRequests?: string | null;
  instanceDbQueries?: string | null;
  redisMaxmemory: string | null;
  staleReads: number | null;
  staleChecks: number | null;
  staleChecksFailed: number | null;
  /** A staleness checker's windows (lab/cell/staleness.ts), or null without one. */
  staleness?: Staleness | null;
  /** Over the run's fault windows: the worst one-second p99, the requests failed, the slowest hit recovery. */
  faultWorstP99Ms: number | null;
  faultFailed: number | null;
  faultRecoveryS: number | null;
  /** Seconds written to the run's timeline file. */
  timelineRows: number | null;
  serverCpuS: number | null;
  serverRssPeakMb: number | null;
  loadgenCpuS: number | null;
  /** Postgres's and Redis's CPU seconds over the run (lab/cell/service_cpu.ts), or null. */
  postgresCpuS?: number | null;
  redisCpuS?: number | null;
  /** What processes that are not the lab's, and the hypervisor, took beside the run (lab/cell/other_cpu.ts). */
  otherCpu?: OtherCpu | null;
  /** What each tier cost, as the server timed it (lab/cell/server_timing.ts), or null. */
  serverTiming?: ServerTiming | null;
  /** The round trips through the cell's proxies as delivered (lab/cell/path_rtt.ts), or null. */
  pathRtt?: { postgresMs: number | null; redisMs: number | null } | null;
  invalidReason: string | null;
  rawPath: string;
}

export function keyParams(distribution: KeyDistribution): string {
  const { kind: _kind, ...params } = distribution;
  return Object.entries(params)
    .map(([name, value]) => `${name}=${value}`)
    .join(";");
}

/** The plan's columns, shared by experiment rows and `bun run attack --csv` rows. */
export function planColumns(plan: AttackPlan, r: NormalizedResult | null) {
  return {
    load_model: plan.model.kind,
    offered_rps: r?.offeredRps ?? (plan.model.kind === "open" ? plan.model.rateRps : null),
    connections: plan.model.kind === "closed" ? plan.model.connections : plan.maxConnections,
    duration_s: plan.durationS,
    warmup_s: plan.warmupS,
    timeout_s: plan.timeoutS,
    request_mix: plan.requests.map((t) => `${t.name}:${t.weight}:${t.method} ${t.path}`).join(" | "),
    key_distribution: plan.keys.distribution.kind,
    key_params: keyParams(plan.keys.distribution),
    keyspace: plan.keys.keyspace,
    key_seed: plan.keys.seed,
  } satisfies Partial<CsvRow>;
}

/** The tool's result as columns (null when the tool gave none), shared by both kinds of row. */
export function resultColumns(r: NormalizedResult | null, latencyResolutionMs: number) {
  const transportErrors = r?.errorCounts ? Object.values(r.errorCounts).reduce((a, b) => a + b, 0) : null;
  return {
    requests: r?.requests ?? null,
    completed: r?.completed ?? null,
    ok: r?.ok ?? null,
    errors:
      r && r.completed !== null && r.ok !== null && transportErrors !== null
        ? r.completed - r.ok + transportErrors
        : null,
    dropped: r?.droppedOrAborted ?? null,
    status_counts: r?.statusCounts ? JSON.stringify(r.statusCounts) : null,
    error_counts: r?.errorCounts ? JSON.stringify(r.errorCounts) : null,
    achieved_rps: r?.achievedRps ?? null,
    ok_rps: r?.okRps ?? null,
    drain_s: r?.drainS ?? null,
    latency_min_ms: r?.latencyMs.min ?? null,
    latency_mean_ms: r?.latencyMs.mean ?? null,
    latency_p50_ms: r?.latencyMs.p50 ?? null,
    latency_p90_ms: r?.latencyMs.p90 ?? null,
    latency_p95_ms: r?.latencyMs.p95 ?? null,
    latency_p99_ms: r?.latencyMs.p99 ?? null,
    latency_p99_9_ms: r?.latencyMs.p99_9 ?? null,
    latency_max_ms: r?.latencyMs.max ?? null,
    latency_ok_p50_ms: r?.okLatencyMs?.p50 ?? null,
    latency_ok_p99_ms: r?.okLatencyMs?.p99 ?? null,
    latency_resolution_ms: latencyResolutionMs,
    bytes_in: r?.bytesIn ?? null,
  } satisfies Partial<CsvRow>;
}

/** Where the row was measured (the machine running the lab), shared by both kinds of row. */
export function machineColumns(m: Machine) {
  return {
    git_sha: m.gitSha,
    git_dirty: m.gitDirty,
    bun_version: m.bunVersion,
    os: m.os,
    kernel: m.kernel,
    arch: m.arch,
    cpu_model: m.cpuModel,
    cpu_count: m.cpuLimitCores ?? m.cpuCount,
    mem_total_gb: m.memTotalGb,
  } satisfies Partial<CsvRow>;
}

export interface RowContext {
  runId: string;
  startedAt: string;
  name: string;
  experiment: Experiment;
  services: Services;
  machine: Machine;
  tool: Tool;
  detection: Detection;
  /** The round trips the command line asked for (`--miss-cost-ms`, `--redis-rtt-ms`), absolute. */
  asked: AskedRoundTrips;
  /** The lab's own, measured before the first cell (lab/cell/idle_probe.ts); null before, or with no proxy. */
  base: IdleBase | null;
}

export function buildRow(
  context: RowContext,
  cell: SettledCell,
  attack: ExperimentAttack,
  plan: AttackPlan,
  measured: Measured,
): CsvRow {
  const r = measured.result;
  const m = context.machine;
  const { settings, proxied } = cell;
  const seed = seedFor(context.experiment, attack);
  return {
    run_id: context.runId,
    started_at_utc: context.startedAt,
    experiment: context.name,
    attack: attack.name,
    strategy: cell.strategy,
    repeat: cell.repeat,
    tool: context.tool.name,
    tool_version: context.detection.version,
    ...planColumns(plan, r),
    ...traceColumns(plan, context.tool.capabilities.sends),
    seeded_rows: seed.rows,
    seed: seed.seed,
    description_bytes: seed.descriptionBytes,
    reviews_per_product: seed.reviewsPerProduct ?? 0,
    payload_bytes: describePayload(seed.payloadBytes),
    // The settle before the cell is the cell's, not the attack's: the run fills it in (lab/run/run_cell.ts).
    ...settleColumns(null),
    instances: measured.instances ?? settings.instances,
    topology: measured.topology ?? null,
    loadgen_hosts: measured.loadgenHosts ?? attack.loadgenHosts ?? 0,
    pg_driver: pgDriverDescription(measured.pgDriver ?? settings.pgDriver),
    pg_pool_max: settings.pgPoolMax,
    pg_queue_max: settings.pgQueueMax,
    pg_acquire_timeout_ms: settings.pgAcquireTimeoutMs,
    max_event_loop_delay_ms: settings.maxEventLoopDelayMs,
    cache_ttl_ms: cell.strategy === "none" ? null : settings.cacheTtlMs,
    l1_ttl_ms: cell.strategy === "two_tier" || cell.strategy === "tracking" ? settings.l1TtlMs : null,
    l1_max_entries:
      cell.strategy === "local" || cell.strategy === "two_tier" || cell.strategy === "tracking"
        ? settings.l1MaxEntries
        : null,
    early_refresh_beta: cell.strategy === "none" ? null : settings.earlyRefreshBeta,
    server_cpu_limit:
      measured.serverCpuLimit ?? (settings.cpuLimit === null ? null : `${settings.cpuLimit} CPU`),
    redis_maxmemory: measured.redisMaxmemory,
    redis_client:
      cell.strategy === "redis" || cell.strategy === "two_tier" || cell.strategy === "tracking"
        ? (measured.redisClient ?? `${settings.redisClient} (planned; the server never described it)`)
        : null,
    redis_path: describePath(attack, "redis", proxied.includes("redis")),
    postgres_path: describePath(attack, "postgres", proxied.includes("postgres")),
    ...roundTripColumns(attack, proxied, context),
    faults: describeFaults(attack.faults),
    ...resultColumns(r, context.tool.capabilities.latencyResolutionMs),
    list_targets: measured.listTargets,
    targets_sent: measured.targetsSent,
    target_reuse_ratio: measured.targetReuseRatio,
    shed: measured.shed,
    shed_ratio:
      measured.shed !== null && measured.serverRequests ? measured.shed / measured.serverRequests : null,
    shed_event_loop: measured.shedEventLoop,
    server_requests: measured.serverRequests,
    distinct_keys: measured.distinctKeys,
    distinct_keys_expected: measured.distinctKeysExpected,
    hit_ratio: measured.hitRatio,
    hit_ratio_expected: measured.hitRatioExpected,
    hit_ratio_optimal: measured.hitRatioOptimal,
    l1_hit_ratio_expected: measured.l1HitRatioExpected ?? null,
    l1_hit_ratio: measured.l1HitRatio,
    l2_hit_ratio: measured.l2HitRatio,
    db_queries: measured.dbQueries,
    db_queries_source: measured.dbQueriesSource,
    db_load_ms_p50: measured.dbLoadMs?.p50Ms ?? null,
    db_load_ms_p99: measured.dbLoadMs?.p99Ms ?? null,
    db_load_ms_mean: measured.dbLoadMs?.meanMs ?? null,
    pg_exec_ms_mean: measured.pgExecMeanMs ?? null,
    ...tierColumns(measured.serverTiming ?? null),
    postgres_path_rtt_ms: measured.pathRtt?.postgresMs ?? null,
    redis_path_rtt_ms: measured.pathRtt?.redisMs ?? null,
    // Filled in by the run, which holds the base cells the model predicts from (lab/run/run_experiment.ts).
    predicted_mean_ms: null,
    predicted_p99_ms: null,
    predicted_from: null,
    predicted_reason: null,
    instance_requests: measured.instanceRequests ?? null,
    instance_db_queries: measured.instanceDbQueries ?? null,
    db_offload: measured.dbOffload,
    cache_errors: measured.cacheErrors,
    load_waits: measured.loadWaits,
    refresh_loads: measured.refreshLoads,
    loads_per_key_per_ttl: measured.loadsPerKeyPerTtl,
    redis_evicted_keys: measured.redisEvictedKeys,
    redis_entries: measured.redisEntries ?? null,
    redis_bytes_per_entry: measured.redisBytesPerEntry ?? null,
    redis_tracking_items: measured.redisTrackingItems ?? null,
    metrics_from_unix_s: measured.metricsWindow?.fromS ?? null,
    metrics_to_unix_s: measured.metricsWindow?.toS ?? null,
    stale_reads: measured.staleReads,
    stale_checks: measured.staleChecks,
    stale_checks_failed: measured.staleChecksFailed,
    staleness_windows: measured.staleness?.windows ?? null,
    staleness_p50_ms: measured.staleness?.p50Ms ?? null,
    staleness_p99_ms: measured.staleness?.p99Ms ?? null,
    staleness_max_ms: measured.staleness?.maxMs ?? null,
    staleness_bound_ms: measured.staleness?.limitMs ?? null,
    stale_beyond_bound: measured.staleness?.beyondBound ?? null,
    stale_read_ratio: measured.staleness?.staleReadRatio ?? null,
    fault_worst_p99_ms: measured.faultWorstP99Ms,
    fault_failed: measured.faultFailed,
    fault_recovery_s: measured.faultRecoveryS,
    timeline_rows: measured.timelineRows,
    server_cpu_s: measured.serverCpuS,
    server_rss_peak_mb: measured.serverRssPeakMb,
    loadgen_cpu_s: measured.loadgenCpuS,
    ...cpuColumns(measured, plan.durationS),
    other_cpu_per_s: measured.otherCpu?.otherPerS ?? null,
    cpu_steal_per_s: measured.otherCpu?.stealPerS ?? null,
    valid: measured.invalidReason === null,
    invalid_reason: measured.invalidReason,
    warnings: warningsOf(measured, plan.durationS, m.cpuLimitCores ?? m.cpuCount),
    ...machineColumns(m),
    postgres_version: context.services.postgres.version,
    redis_server: context.services.redis.server ?? "redis",
    redis_version: context.services.redis.version,
    services_mode: `postgres=${context.services.postgres.mode};redis=${context.services.redis.mode}`,
    raw_path: measured.rawPath,
  };
}

/** The measurements of a row that has none: only the reason and where raw output would be. */
export function failed(reason: string, rawPath: string): Measured {
  return {
    result: null,
    listTargets: null,
    targetsSent: null,
    targetReuseRatio: null,
    serverRequests: null,
    distinctKeys: null,
    distinctKeysExpected: null,
    hitRatio: null,
    hitRatioExpected: null,
    hitRatioOptimal: null,
    l1HitRatio: null,
    l2HitRatio: null,
    dbQueries: null,
    dbQueriesSource: null,
    dbOffload: null,
    cacheErrors: null,
    shed: null,
    shedEventLoop: null,
    loadWaits: null,
    refreshLoads: null,
    loadsPerKeyPerTtl: null,
    redisEvictedKeys: null,
    serverCpuLimit: null,
    redisMaxmemory: null,
    staleReads: null,
    staleChecks: null,
    staleChecksFailed: null,
    faultWorstP99Ms: null,
    faultFailed: null,
    faultRecoveryS: null,
    timelineRows: null,
    serverCpuS: null,
    serverRssPeakMb: null,
    loadgenCpuS: null,
    invalidReason: reason,
    rawPath,
  };
}

/** One line for the log after each cell. */
export function rowLine(row: CsvRow): string {
  const num = (value: unknown, digits: number) => (typeof value === "number" ? value.toFixed(digits) : "n/a");
  if (row.valid !== true) return `INVALID: ${row.invalid_reason}`;
  return `${num(row.achieved_rps, 0)} rps · p50 ${num(row.latency_p50_ms, 2)} ms · p99 ${num(row.latency_p99_ms, 2)} ms · hit ${num(row.hit_ratio, 3)} (expected ${num(row.hit_ratio_expected, 3)}) · db ${row.db_queries}`;
}
