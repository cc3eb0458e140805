/**
 * `bun run attack --csv FILE`: one row for one attack, in the experiments' CSV schema (lab/results/csv.ts),
 * so `bun run report` and every reader of those files take it as it is. A run here and an import of the k6
 * operator's runner files give the same columns. When the target is a cachelab server (it answers GET
 * /info), its settings and its own counters over the measured run fill the server's columns and check the
 * tool's counts, as in an experiment; against any other URL those columns stay empty, never 0.
 */
import { categoryOf } from "../../seed/seed.ts";
import type { ServerInfo } from "../../server/lab_routes.ts";
import { loadTimesBetween } from "../../server/load_timer.ts";
import { sentRequests } from "../cell/cell_trace.ts";
import { counterDelta, readHitRatio, type ServerStatsSnapshot } from "../cell/counters.ts";
import { continuityProblem } from "../cell/instances.ts";
import {
  distinctExpectation,
  HIT_RATIO_TOLERANCE,
  judge,
  judgeStream,
  sampledHitRatioTolerance,
} from "../cell/judge.ts";
import { serverTimingBetween } from "../cell/server_timing.ts";
import { settleColumns } from "../cell/settle.ts";
import type { AttackRun } from "../load/run_attack.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { allowedReuseRatio, reusedPositions, sentCount } from "../plan/segments.ts";
import { simulate } from "../sim/simulate.ts";
import { traceColumns } from "../trace/trace_columns.ts";
import { machineColumns, planColumns, resultColumns } from "./cell_row.ts";
import type { CsvRow } from "./csv.ts";
import type { Machine } from "./machine.ts";
import { pgDriverDescription } from "./pg_driver.ts";
import { tierColumns } from "./row_costs.ts";

/** A cachelab server's view of the measured run: what it is, and its counters before and after. */
export interface ServerView {
  info: ServerInfo;
  before: ServerStatsSnapshot;
  after: ServerStatsSnapshot;
}

/** What the stream and the simulation of it say (`--reset`: the server's cache started empty). */
export interface StreamCheck {
  distinctKeysExpected: number | null;
  hitRatioExpected: number | null;
  hitRatioOptimal: number | null;
  /** Why the stream or the hit ratio cannot be trusted, or null. */
  problem: string | null;
}

/**
 * The experiments' stream checks for one `bun run attack` on a server reset before its warm-up: the
 * positions the tool sent replayed through a model of the server's strategy from an empty cache (its
 * settings and seed from GET /info), the distinct keys a fresh stream gives, re-sent targets.
 */
export function checkStream(
  run: AttackRun,
  plan: AttackPlan,
  server: ServerView & { info: { seed: NonNullable<ServerInfo["seed"]> } },
): StreamCheck {
  const { info, before, after } = server;
  const sent = run.measured.result.sent;
  if (sent === null) {
    return {
      distinctKeysExpected: null,
      hitRatioExpected: null,
      hitRatioOptimal: null,
      problem: `${run.tool.name} did not say which targets it sent: the stream cannot be checked`,
    };
  }
  const warmup = run.warmup ? (sentRequests(run.warmup, run.warmupTargets, 0, plan.keys.seed) ?? []) : [];
  const measured =
    sentRequests(run.measured, run.targets, (run.warmup?.wallS ?? 0) * 1_000, plan.keys.seed) ?? [];
  const seed = info.seed;
  const sim = simulate(warmup, measured, {
    strategy: info.strategy,
    cacheTtlMs: info.settings.cacheTtlMs,
    l1TtlMs: info.settings.l1TtlMs,
    l1MaxEntries: info.settings.l1MaxEntries,
    rows: seed.rows,
    categoryOf: (id) => categoryOf(seed, id),
  });
  const targetsSent = sentCount(sent);
  const reused = reusedPositions(sent, run.targets.length);
  const distinct = distinctExpectation(plan, measured, targetsSent - reused);
  const reads = after.reads - before.reads;
  const problem = judgeStream({
    targetsSent,
    reused,
    allowedReuseRatio: allowedReuseRatio(run.tool.capabilities.sends, plan),
    distinctKeys: after.distinctKeys,
    distinctKeysExpected: distinct.mean,
    distinctKeysTolerance: distinct.tolerance,
    hitRatio: readHitRatio(before, after),
    hitRatioExpected: sim.hitRatio,
    hitRatioTolerance:
      sent.kind === "sampled" ? sampledHitRatioTolerance(distinct.sd, reads) : HIT_RATIO_TOLERANCE,
    cacheErrors: after.cacheErrors - before.cacheErrors,
    faultsDeclared: false,
    faultsReachRedis: false,
    staleChecksFailed: 0,
  });
  return {
    distinctKeysExpected: Math.round(distinct.mean),
    hitRatioExpected: sim.hitRatio,
    hitRatioOptimal: sim.optimalHitRatio,
    problem,
  };
}

export interface AttackRowInput {
  runId: string;
  startedAt: string;
  /** What the row is: `run` (a tool process here) or `k6-operator import` (the runners' files merged). */
  source: "run" | "k6-operator import";
  plan: AttackPlan;
  result: NormalizedResult;
  latencyResolutionMs: number;
  topology: string;
  /** Load-generator hosts apart from the server (the runner pods of an import), 0 for a tool here. */
  loadgenHosts: number;
  /** Targets handed to the tool, how many it sent, and how many of those re-sent a position. */
  targets: { list: number; sent: number | null; reused: number | null } | null;
  server: ServerView | null;
  /** The stream checks against a server reset before the run; null: its cache's history is unknown. */
  stream?: StreamCheck | null;
  rawPath: string;
  machine: Machine;
  maxErrorRatio?: number;
}

/** Why the row cannot be trusted, or null. */
function invalidReason(input: AttackRowInput): string | null {
  const { result, server, plan } = input;
  const inFlight = plan.model.kind === "closed" ? plan.model.connections : plan.maxConnections;
  const reasons = [
    judge(result, {
      maxErrorRatio: input.maxErrorRatio ?? 0.01,
      serverRequests: server ? server.after.requests - server.before.requests : null,
      inFlightAllowance: inFlight,
      shed: server ? counterDelta(server.before, server.after, "shed") : null,
    }),
  ];
  if (server) {
    const errors = server.after.cacheErrors - server.before.cacheErrors;
    // With a stream check the same count is judged there.
    if (errors > 0 && !input.stream) reasons.push(`the server swallowed ${errors} cache errors`);
    const one = (snapshot: ServerStatsSnapshot) => ({ sum: snapshot, each: [snapshot] });
    reasons.push(continuityProblem(one(server.before), one(server.after)));
  }
  reasons.push(input.stream?.problem ?? null);
  const problems = reasons.filter((reason) => reason !== null);
  return problems.length === 0 ? null : problems.join("; ");
}

export function attackRow(input: AttackRowInput): CsvRow {
  const { plan, result: r, server } = input;
  const delta = (name: string) => (server ? counterDelta(server.before, server.after, name) : null);
  const settings = server?.info.settings;
  const strategy = server?.info.strategy ?? null;
  const caching = strategy !== null && strategy !== "none";
  const withRedis = strategy === "redis" || strategy === "two_tier" || strategy === "tracking";
  const requests = delta("requests");
  const dbQueries = delta("dbQueries");
  const loads = server ? loadTimesBetween([server.before.dbLoadMs], [server.after.dbLoadMs]) : null;
  // A hit ratio over a cache of unknown history (no --reset) is no figure to compare: left empty.
  const stream = input.stream ?? null;
  const hitRatio = server && stream ? readHitRatio(server.before, server.after) : null;
  const round = (value: number | null) => (value === null ? null : Math.round(value * 10_000) / 10_000);
  const reason = invalidReason(input);
  return {
    run_id: input.runId,
    started_at_utc: input.startedAt,
    experiment: "attack",
    attack: input.source,
    strategy,
    repeat: 1,
    tool: r.tool,
    tool_version: r.toolVersion || null,
    ...planColumns(plan, r),
    // Only tools that send their list in order replay a trace (runAttack refuses the others).
    ...traceColumns(plan, "prefix"),
    seeded_rows: null,
    seed: null,
    description_bytes: null,
    reviews_per_product: null,
    payload_bytes: null,
    ...settleColumns(null),
    topology: input.topology,
    loadgen_hosts: input.loadgenHosts,
    instances: server ? 1 : null,
    pg_driver: settings ? pgDriverDescription(settings.pgDriver) : null,
    pg_pool_max: settings?.pgPoolMax ?? null,
    pg_queue_max: settings?.pgQueueMax ?? null,
    pg_acquire_timeout_ms: settings?.pgAcquireTimeoutMs ?? null,
    max_event_loop_delay_ms: settings?.maxEventLoopDelayMs ?? null,
    cache_ttl_ms: caching ? (settings?.cacheTtlMs ?? null) : null,
    l1_ttl_ms: strategy === "two_tier" || strategy === "tracking" ? (settings?.l1TtlMs ?? null) : null,
    l1_max_entries:
      strategy === "local" || strategy === "two_tier" || strategy === "tracking"
        ? (settings?.l1MaxEntries ?? null)
        : null,
    early_refresh_beta: caching ? (settings?.earlyRefreshBeta ?? null) : null,
    server_cpu_limit: null,
    redis_maxmemory: null,
    redis_client: withRedis ? (server?.after.redisClient ?? null) : null,
    redis_path: null,
    postgres_path: null,
    // Any server's own distance to its services: unknown here, so never 0.
    miss_cost_ms: null,
    miss_cost_base_ms: null,
    miss_cost_added_ms: null,
    redis_rtt_ms: null,
    redis_rtt_base_ms: null,
    redis_rtt_added_ms: null,
    faults: null,
    ...resultColumns(r, input.latencyResolutionMs),
    list_targets: input.targets?.list ?? null,
    targets_sent: input.targets?.sent ?? null,
    target_reuse_ratio:
      input.targets?.sent && input.targets.reused !== null
        ? Math.round((input.targets.reused / input.targets.sent) * 1e6) / 1e6
        : null,
    shed: delta("shed"),
    shed_ratio: requests ? (delta("shed") ?? 0) / requests : null,
    shed_event_loop: delta("shedEventLoop"),
    server_requests: requests,
    distinct_keys: server ? server.after.distinctKeys : null,
    distinct_keys_expected: stream?.distinctKeysExpected ?? null,
    hit_ratio: round(hitRatio),
    hit_ratio_expected: round(stream?.hitRatioExpected ?? null),
    hit_ratio_optimal: round(stream?.hitRatioOptimal ?? null),
    l1_hit_ratio_expected: null,
    l1_hit_ratio: null,
    l2_hit_ratio: null,
    db_queries: dbQueries,
    db_queries_source: server ? "server" : null,
    db_load_ms_p50: loads?.p50Ms ?? null,
    db_load_ms_p99: loads?.p99Ms ?? null,
    db_load_ms_mean: loads?.meanMs ?? null,
    // The attack CLI reads no pg_stat_statements: the server's own timing only.
    pg_exec_ms_mean: null,
    ...tierColumns(
      server
        ? serverTimingBetween(
            { sum: server.before, each: [server.before] },
            { sum: server.after, each: [server.after] },
          )
        : null,
    ),
    instance_requests: null,
    instance_db_queries: null,
    db_offload: requests && dbQueries !== null ? round(1 - dbQueries / requests) : null,
    cache_errors: delta("cacheErrors"),
    load_waits: delta("loadWaits"),
    refresh_loads: delta("refreshLoads"),
    loads_per_key_per_ttl: null,
    redis_evicted_keys: null,
    redis_entries: null,
    redis_bytes_per_entry: null,
    redis_tracking_items: null,
    metrics_from_unix_s: null,
    metrics_to_unix_s: null,
    stale_reads: null,
    stale_checks: null,
    stale_checks_failed: null,
    staleness_windows: null,
    staleness_p50_ms: null,
    staleness_p99_ms: null,
    staleness_max_ms: null,
    staleness_bound_ms: null,
    stale_beyond_bound: null,
    stale_read_ratio: null,
    fault_worst_p99_ms: null,
    fault_failed: null,
    fault_recovery_s: null,
    timeline_rows: null,
    server_cpu_s:
      server?.before.process && server.after.process
        ? Math.round((server.after.process.cpuS - server.before.process.cpuS) * 100) / 100
        : null,
    server_rss_peak_mb: server?.after.process?.rssPeakMb ?? null,
    loadgen_cpu_s: null,
    postgres_path_rtt_ms: null,
    redis_path_rtt_ms: null,
    predicted_mean_ms: null,
    predicted_p99_ms: null,
    predicted_from: null,
    predicted_reason: null,
    postgres_cpu_s: null,
    redis_cpu_s: null,
    loadgen_cpu_per_s: null,
    server_cpu_per_s: null,
    postgres_cpu_per_s: null,
    redis_cpu_per_s: null,
    other_cpu_per_s: null,
    cpu_steal_per_s: null,
    valid: reason === null,
    invalid_reason: reason,
    warnings: null,
    ...machineColumns(input.machine),
    postgres_version: null,
    redis_server: null,
    redis_version: null,
    services_mode: null,
    raw_path: input.rawPath,
  };
}
