/**
 * One measured attack of a cell, as its steps: sockets settled, the warm-up and the measured run on their
 * segments of the stream (with the server polled, the faults run and `during` beside it), then the stream
 * checked and simulated (judge.ts), judged, its seconds and its row written (results/measured_row.ts).
 */
import { faultProblems } from "../faults/network.ts";
import { runLoad } from "../load/distributed.ts";
import type { ToolRun } from "../load/run_attack.ts";
import type { Tool } from "../load/tool.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { CLOSED_RATE_MARGIN, listSize, sentCount } from "../plan/segments.ts";
import { buildRow, failed } from "../results/cell_row.ts";
import type { CsvRow } from "../results/csv.ts";
import { measuredRow, recordTimeline } from "../results/measured_row.ts";
import type { ReplayedSegment } from "../trace/replayed_curves.ts";
import { sentRequests } from "./cell_trace.ts";
import { redisEvictions } from "./constraints.ts";
import { chooseDbQueries, pgStatementCalls, readHitRatio } from "./counters.ts";
import { groupStats, groupStatsWindow, groupUsage } from "./instances.ts";
import { judgeRun, streamChecks } from "./judge.ts";
import type { Counted, MeasureRun, MeasureTarget, WarmedUp, WarmupCount } from "./measurement.ts";
import { missCost, pgReadExecTimes } from "./miss_cost.ts";
import { pingPaths } from "./path_rtt.ts";
import { pollServerStats } from "./poll.ts";
import { redisFootprint } from "./redis_footprint.ts";
import type { ServerProcess } from "./server_process.ts";
import { serverTimingBetween } from "./server_timing.ts";
import { type ServiceCpu, serviceCpu } from "./service_cpu.ts";
import { settleSockets } from "./sockets.ts";

/**
 * One measured attack, as its steps: sockets settled, warm-up, measured run with what is counted beside it,
 * the stream checked and simulated, judged, its seconds recorded, one row. A tool that fails is an invalid row.
 */
export async function measureAttack(
  shared: MeasureRun,
  target: MeasureTarget,
): Promise<{ row: CsvRow; result: NormalizedResult | null; segment: ReplayedSegment | null }> {
  const { context } = shared;
  const { cell, attack, plan, rawPath } = target;
  if (target.servers[0] === undefined) throw new RangeError("Cannot measure: no server instance");
  try {
    await settleServerSockets(shared, target.servers);
    const warm = await warmUp(shared, target);
    const counted = await measuredRun(shared, target, warm);
    const checks = streamChecks(shared, target, counted);
    const reasons = judgeRun(shared, target, { ...counted, ...checks });
    const timeline = recordTimeline(shared, target, counted);
    const faultReasons = faultProblems(attack.faults ?? [], counted.windows);
    if (faultReasons !== null) reasons.push(faultReasons);
    const row = measuredRow(shared, target, { ...counted, ...checks, ...timeline, reasons });
    return { row, result: counted.run.result, segment: sentSegment(plan, warm, counted) };
  } catch (error) {
    const reason = `tool failed: ${(error as Error).message.split("\n")[0]}`;
    return {
      row: buildRow(context, cell, attack, plan, failed(reason, rawPath)),
      result: null,
      segment: null,
    };
  }
}

/** A previous cell's connection storm must not fail this cell's connects (lab/cell/sockets.ts). */
async function settleServerSockets(shared: MeasureRun, servers: ServerProcess[]): Promise<void> {
  for (const server of servers) {
    const settled = await settleSockets(server.port);
    if (settled.before >= 10_000) {
      shared.log?.(
        `  waited ${(settled.waitedMs / 1_000).toFixed(1)} s for ${settled.before} TIME_WAIT sockets to port ${server.port} to drain (${settled.left} left)`,
      );
    }
  }
}

/** How many targets the tool gets for a run of `durationS`, as the way it sends them needs. */
function listFor(
  tool: Tool,
  plan: AttackPlan,
  durationS: number,
  closedRateRps: number | null = null,
): number {
  const size = listSize(tool.capabilities.sends, plan, durationS, closedRateRps);
  if (typeof size === "string") throw new RangeError(`Cannot size ${tool.name}'s target list: ${size}`);
  return size;
}

/** The warm-up on the stream's first segment: thrown away, but its requests are the simulation's start. */
async function warmUp(shared: MeasureRun, target: MeasureTarget): Promise<WarmedUp> {
  const { tool, detection } = shared.context;
  const { plan, trace } = target;
  if (plan.warmupS <= 0) return { warmupList: 0, closedRateRps: null };
  const warmupList = listFor(tool, plan, plan.warmupS);
  const targets = shared.streams.slice(plan, 0, warmupList);
  const startMs = performance.now() - trace.startedMs;
  const before = await groupStats(target.servers);
  const warmup = await runLoad(tool, plan, target.loadgenHosts, {
    targets,
    durationS: plan.warmupS,
    workDir: target.rawPath,
    label: "warmup",
    detection,
    signal: shared.signal,
  });
  for (const request of sentRequests(warmup, targets, startMs, plan.keys.seed) ?? []) {
    trace.requests.push(request);
  }
  const { completed, durationS, sent } = warmup.result;
  let closedRateRps: number | null = null;
  if (plan.model.kind === "closed" && completed !== null && durationS) {
    closedRateRps = (CLOSED_RATE_MARGIN * completed) / durationS;
  }
  return {
    warmupList,
    closedRateRps,
    warmupSent: { targets: targets.length, sent },
    warmupCounted:
      completed === null || sent === null
        ? null
        : { requestsBefore: before.sum.requests, completed, sent: sentCount(sent) },
  };
}

/** The warm-up's requests as the server counted them beside the tool's account; null: not known. */
function warmupCount(warm: WarmedUp, requestsNow: number): WarmupCount | null {
  const counted = warm.warmupCounted;
  if (!counted) return null;
  return { server: requestsNow - counted.requestsBefore, completed: counted.completed, sent: counted.sent };
}

/** What the cell sent of its stream, for the replayed curves (lab/run/run_curves.ts); null: not known. */
function sentSegment(plan: AttackPlan, warm: WarmedUp, counted: Counted): ReplayedSegment | null {
  const measuredSent = counted.run.result.sent;
  const warmSent = warm.warmupSent ?? null;
  if (measuredSent === null || (warmSent !== null && warmSent.sent === null)) return null;
  return {
    warmList: warmSent?.targets ?? 0,
    warmSent: warmSent?.sent ?? null,
    measuredFrom: warm.warmupList,
    measuredList: counted.targets.length,
    measuredSent,
    seed: plan.keys.seed,
  };
}

/** The measured run on the next segment, with the server polled, the faults run and `during` beside it. */
async function measuredRun(shared: MeasureRun, target: MeasureTarget, warm: WarmedUp): Promise<Counted> {
  const { context, sql, status } = shared;
  const { experiment: exp, tool, detection } = context;
  const { cell, attack, plan, servers, trace, memory } = target;
  const listTargets = listFor(tool, plan, plan.durationS, warm.closedRateRps);
  const targets = shared.streams.slice(plan, warm.warmupList, listTargets);
  const evictedBefore = memory ? await redisEvictions(shared.redis) : null;
  const metricsFromS = (await target.scraped?.()) ?? null; // Prometheus has seen the warm-up's end
  const beforeEach = await groupStatsWindow(servers);
  const before = beforeEach.sum;
  const usageBefore = groupUsage(servers, beforeEach);
  const callsBefore = await pgStatementCalls(sql);
  const execBefore = await pgReadExecTimes(sql);
  const cpuBefore = await serviceCpu(sql, shared.redis);
  const startedMs = performance.now();
  const sinceCellMs = () => performance.now() - trace.startedMs;
  // The server's own view each second (also the live status line), and the faults, both beside the tool.
  const beside = new AbortController();
  const polling = pollServerStats(servers, beside.signal, ({ stats: now }) => {
    const elapsedS = (performance.now() - startedMs) / 1_000;
    if (elapsedS < 0.5) return;
    status(
      `cell ${cell.index} ${cell.strategy} r${cell.repeat} ${attack.name}: ${elapsedS.toFixed(0)}/${plan.durationS} s · server ${((now.requests - before.requests) / elapsedS).toFixed(0)} rps · cache errors ${now.cacheErrors - before.cacheErrors}`,
    );
  });
  const duringAbort = new AbortController();
  const during = exp.during?.({
    serverUrl: (servers[0] as ServerProcess).url,
    serverUrls: servers.map((server) => server.url),
    strategy: cell.strategy,
    settings: cell.settings,
    signal: duringAbort.signal,
    keyspace: plan.keys.keyspace,
    nowMs: sinceCellMs,
  });
  const measuredStartMs = sinceCellMs();
  const startEpochMs = Date.now();
  const faulting = target.network.runFaults(attack.faults ?? [], startEpochMs, beside.signal);
  // The round trips as delivered, beside the load; not through a path a fault takes down (no round trip then).
  const { services: paths, proxied } = target.network;
  const pinging = pingPaths(paths, (attack.faults ?? []).length > 0 ? [] : proxied, beside.signal);
  let run: ToolRun;
  try {
    run = await runLoad(tool, plan, target.loadgenHosts, {
      targets,
      durationS: plan.durationS,
      workDir: target.rawPath,
      label: "measured",
      detection,
      signal: shared.signal,
    });
  } finally {
    beside.abort();
    duringAbort.abort();
    status("");
  }
  const [samples, windows, pathRtt] = await Promise.all([polling, faulting, pinging]);
  const stale = during ? await during : null;
  const afterEach = await groupStats(servers);
  const cpuAfter: ServiceCpu = await serviceCpu(sql, shared.redis);
  const after = afterEach.sum;
  const metricsToS = metricsFromS === null ? null : ((await target.scraped?.()) ?? null);
  const evictedAfter = memory ? await redisEvictions(shared.redis) : null;
  const footprint =
    cell.strategy === "redis" || cell.strategy === "two_tier" || cell.strategy === "tracking"
      ? await redisFootprint(shared.redis)
      : null;
  const usageAfter = groupUsage(servers, afterEach);
  const callsAfter = await pgStatementCalls(sql);
  const execAfter = await pgReadExecTimes(sql);
  const inFlight = plan.model.kind === "closed" ? plan.model.connections : plan.maxConnections;
  // pg_stat_statements deltas (not a reset: a reset would break another run's deltas) are the database's
  // own count, used when they agree with the server's.
  const { dbQueries, source: dbQueriesSource } = chooseDbQueries({
    server: after.dbQueries - before.dbQueries,
    probeQueries: after.probeDbQueries - before.probeDbQueries,
    pgDelta: callsBefore !== null && callsAfter !== null ? callsAfter - callsBefore : null,
    inFlight,
  });
  return {
    run,
    targets,
    listTargets,
    measuredStartMs,
    startEpochMs,
    beforeEach,
    afterEach,
    usageBefore,
    usageAfter,
    redisEvictedKeys: evictedBefore === null || evictedAfter === null ? null : evictedAfter - evictedBefore,
    redisFootprint: footprint,
    metricsWindow:
      metricsFromS === null || metricsToS === null ? null : { fromS: metricsFromS, toS: metricsToS },
    samples,
    windows,
    stale,
    serverRequests: after.requests - before.requests,
    // Nothing is sent between the warm-up's end and `before`: its requests are the difference.
    warmupCount: warmupCount(warm, before.requests),
    reads: after.reads - before.reads,
    hitRatio: readHitRatio(before, after),
    cacheErrors: after.cacheErrors - before.cacheErrors,
    inFlight,
    dbQueries,
    dbQueriesSource,
    missCost: missCost(beforeEach, afterEach, execBefore, execAfter),
    serverTiming: serverTimingBetween(beforeEach, afterEach),
    serviceCpu: { before: cpuBefore, after: cpuAfter },
    pathRtt,
  };
}
