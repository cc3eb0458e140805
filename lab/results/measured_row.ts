/** A measured attack's row and its seconds: what a measurement (lab/cell/measurement.ts) puts in the CSV files. */
import { counterDelta, tierRatio } from "../cell/counters.ts";
import { spread } from "../cell/instances.ts";
import type { Counted, Measurement, MeasureRun, MeasureTarget } from "../cell/measurement.ts";
import { otherCpu } from "../cell/other_cpu.ts";
import type { ServerProcess } from "../cell/server_process.ts";
import { cpuDelta } from "../cell/service_cpu.ts";
import { nearestRank } from "../load/request_timeline.ts";
import type { DuringResult } from "../plan/experiment_plan.ts";
import type { TierCounts } from "../sim/cache_models.ts";
import { buildRow, type Staleness } from "./cell_row.ts";
import type { CsvRow } from "./csv.ts";
import { appendTimeline, type FaultOutcome, faultOutcomes } from "./timeline.ts";
import { timelineRows } from "./timeline_rows.ts";

function maxOf(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length === 0 ? null : Math.max(...numbers);
}

/** A sum that is null when any part is unknown: a missing count is never read as 0. */
function sumOf(values: (number | null)[]): number | null {
  return values.some((value) => value === null) ? null : (values as number[]).reduce((a, b) => a + b, 0);
}

/** The simulation's share of lookups answered in process (local's cache, two_tier's or tracking's L1), or null. */
function inProcessShare(tiers: Record<string, TierCounts> | undefined): number | null {
  const tier = tiers?.local ?? tiers?.l1;
  if (!tier || tier.hits + tier.misses === 0) return null;
  return tier.hits / (tier.hits + tier.misses);
}

/** The run's seconds appended to the timeline file, and the fault outcomes read from them. */
export function recordTimeline(
  shared: MeasureRun,
  target: MeasureTarget,
  counted: Counted,
): { timelineRows: number; outcomes: FaultOutcome[] } {
  const { context } = shared;
  const { cell, attack } = target;
  const timeline = timelineRows({
    base: {
      run_id: context.runId,
      experiment: context.name,
      strategy: cell.strategy,
      tool: context.tool.name,
      attack: attack.name,
      repeat: cell.repeat,
    },
    startEpochMs: counted.startEpochMs,
    tool: counted.run.result.timeline,
    noToolSource: `none (${context.tool.name}): server counters only`,
    samples: counted.samples,
    windows: counted.windows,
  });
  appendTimeline(shared.timelinePath, timeline);
  return { timelineRows: timeline.length, outcomes: faultOutcomes(timeline) };
}

/** The measured attack's row. */
export function measuredRow(shared: MeasureRun, target: MeasureTarget, m: Measurement): CsvRow {
  const { cell, attack, plan, servers, memory } = target;
  const { settings } = cell;
  const before = m.beforeEach.sum;
  const after = m.afterEach.sum;
  const { result, cpuS } = m.run;
  const { targetsSent, reused, sim, outcomes, stale, usageBefore, usageAfter } = m;
  const first = servers[0] as ServerProcess;
  const distinctKeys = after.distinctKeys;
  // Keys across the deployment: the server's count with one instance; with several each instance counts
  // its own, so the sent stream's (exact for the tools that say which positions they sent).
  const keysAcross = servers.length === 1 ? distinctKeys : (sim?.globalDistinctKeys ?? null);
  const round = (value: number | null, digits = 4) =>
    value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;
  return buildRow(shared.context, cell, attack, plan, {
    result,
    listTargets: m.listTargets,
    targetsSent,
    targetReuseRatio: targetsSent && reused !== null ? round(reused / targetsSent, 6) : null,
    serverRequests: m.serverRequests,
    distinctKeys,
    distinctKeysExpected: m.distinctExpected === null ? null : Math.round(m.distinctExpected.mean),
    hitRatio: round(m.hitRatio),
    hitRatioExpected: round(sim?.hitRatio ?? null),
    hitRatioOptimal: round(sim?.optimalHitRatio ?? null),
    l1HitRatioExpected: round(inProcessShare(sim?.tiers)),
    l1HitRatio: round(tierRatio(before, after, ["local", "l1"])),
    l2HitRatio: round(tierRatio(before, after, ["redis", "l2"])),
    dbQueries: m.dbQueries,
    dbQueriesSource: m.dbQueriesSource,
    dbLoadMs: m.missCost.load,
    pgExecMeanMs: m.missCost.pgExecMeanMs,
    dbOffload: m.serverRequests > 0 ? round(1 - m.dbQueries / m.serverRequests) : null,
    cacheErrors: m.cacheErrors,
    staleReads: stale ? stale.staleReads : null,
    staleChecks: stale ? stale.checks : null,
    staleChecksFailed: stale ? stale.failed : null,
    staleness: stale?.stalenessMs === undefined ? null : stalenessFigures(stale),
    shed: counterDelta(before, after, "shed"),
    shedEventLoop: counterDelta(before, after, "shedEventLoop"),
    loadWaits: counterDelta(before, after, "loadWaits"),
    refreshLoads: counterDelta(before, after, "refreshLoads"),
    loadsPerKeyPerTtl:
      cell.strategy === "none" || !keysAcross
        ? null
        : round(
            (after.readDbQueries - before.readDbQueries) /
              keysAcross /
              Math.max(1, (plan.durationS * 1_000) / settings.cacheTtlMs),
          ),
    redisEvictedKeys: m.redisEvictedKeys,
    redisEntries: m.redisFootprint?.entries ?? null,
    redisTrackingItems: m.redisFootprint?.trackingItems ?? null,
    redisBytesPerEntry: m.redisFootprint?.bytesPerEntry ?? null,
    metricsWindow: m.metricsWindow,
    serverCpuLimit:
      first.cpuLimit === null || servers.length === 1
        ? first.cpuLimit
        : `each of ${servers.length}: ${first.cpuLimit}`,
    pgDriver: after.pgDriver ?? null,
    redisClient: after.redisClient ?? null,
    instances: servers.length,
    topology: target.topology,
    loadgenHosts: target.loadgenHosts.length,
    instanceRequests: spread(m.beforeEach, m.afterEach, "requests"),
    instanceDbQueries: spread(m.beforeEach, m.afterEach, "dbQueries"),
    redisMaxmemory: memory?.describe() ?? null,
    faultWorstP99Ms: maxOf(outcomes.map((outcome) => outcome.worstP99Ms)),
    faultFailed: outcomes.length === 0 ? null : sumOf(outcomes.map((outcome) => outcome.failed)),
    faultRecoveryS: maxOf(outcomes.map((outcome) => outcome.recoveryS)),
    timelineRows: m.timelineRows,
    serverCpuS:
      usageBefore && usageAfter ? Math.round((usageAfter.cpuS - usageBefore.cpuS) * 100) / 100 : null,
    serverRssPeakMb: usageAfter?.rssPeakMb ?? null,
    loadgenCpuS: Number.isFinite(cpuS) ? Math.round(cpuS * 100) / 100 : null,
    postgresCpuS: cpuDelta(m.serviceCpu.before.postgresS, m.serviceCpu.after.postgresS),
    redisCpuS: cpuDelta(m.serviceCpu.before.redisS, m.serviceCpu.after.redisS),
    otherCpu: otherCpu(m.serviceCpu.before, m.serviceCpu.after),
    serverTiming: m.serverTiming,
    pathRtt: m.pathRtt,
    invalidReason: m.reasons.length === 0 ? null : m.reasons.join("; "),
    rawPath: target.rawPath,
  });
}

/** The row's staleness figures from a staleness checker's result. */
export function stalenessFigures(stale: DuringResult): Staleness {
  const windows = stale.stalenessMs ?? [];
  const round = (value: number | null) => (value === null ? null : Math.round(value * 100) / 100);
  return {
    windows: windows.length,
    p50Ms: round(nearestRank(windows, 50)),
    p99Ms: round(nearestRank(windows, 99)),
    maxMs: round(windows.at(-1) ?? null),
    limitMs: (stale.boundMs ?? 0) + (stale.marginMs ?? 0),
    beyondBound: stale.beyondBound ?? 0,
    staleReadRatio: stale.reads ? Math.round((stale.staleReads / stale.reads) * 10_000) / 10_000 : null,
  };
}
