/**
 * One measured attack of a cell: the warm-up and the measured run on their segments of the stream, then what
 * the server, the database, the tool and the simulation say about it, judged, as one row.
 */
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { categoryOf } from "../../seed/seed.ts";
import { type CellNetwork, faultProblems } from "../faults/network.ts";
import type { Host } from "../isolation/netns.ts";
import { runLoad } from "../load/distributed.ts";
import type { ToolRun } from "../load/run_attack.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { type Cell, type ExperimentAttack, serverSettings } from "../plan/experiment_plan.ts";
import {
  allowedReuseRatio,
  CLOSED_RATE_MARGIN,
  distinctKeysTolerance,
  expectedDistinctKeys,
  listSize,
  reusedPositions,
  sentCount,
} from "../plan/segments.ts";
import { buildRow, failed, type RowContext, stalenessFigures } from "../results/cell_row.ts";
import type { CsvRow } from "../results/csv.ts";
import { appendTimeline, faultOutcomes } from "../results/timeline.ts";
import { timelineRows } from "../results/timeline_rows.ts";
import { simulate } from "../sim/simulate.ts";
import { type CellTrace, mergeByTime, type StreamCache, sentRequests } from "./cell_trace.ts";
import { type RedisMemoryLimit, redisEvictions } from "./constraints.ts";
import { chooseDbQueries, counterDelta, pgStatementCalls, readHitRatio, tierRatio } from "./counters.ts";
import { continuityProblem, groupStats, groupStatsWindow, groupUsage, spread } from "./instances.ts";
import { HIT_RATIO_TOLERANCE, judge, judgeStream, sampledHitRatioTolerance } from "./judge.ts";
import { pollServerStats } from "./poll.ts";
import type { ServerProcess } from "./server_process.ts";
import { settleSockets } from "./sockets.ts";

function maxOf(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length === 0 ? null : Math.max(...numbers);
}

/** A sum that is null when any part is unknown: a missing count is never read as 0. */
function sumOf(values: (number | null)[]): number | null {
  return values.some((value) => value === null) ? null : (values as number[]).reduce((a, b) => a + b, 0);
}

/** What every measured attack of a run shares. */
export interface MeasureRun {
  /** The run's row context: the experiment (overrides applied), the tool, its detection, the settings. */
  context: RowContext;
  sql: postgres.Sql;
  /** The lab's own Redis client (not the server's): its eviction count under a cell's maxmemory. */
  redis: Redis;
  streams: StreamCache;
  /** The live status line. */
  status: (line: string) => void;
  /** Progress lines (the runner's log). */
  log?: (line: string) => void;
  /** Aborting kills the tool (the runner's Ctrl-C). */
  signal?: AbortSignal;
  /** Where each measured run's seconds go (results/<experiment>.timeline.csv). */
  timelinePath: string;
}

/** One attack of one cell, on the cell's server. */
export interface MeasureTarget {
  cell: Cell;
  attack: ExperimentAttack;
  plan: AttackPlan;
  /** The cell's server instances (one, or the attack's `instances`), in the order of plan.instanceUrls. */
  servers: ServerProcess[];
  trace: CellTrace;
  rawPath: string;
  /** The cell's proxies: the attack's distance is already on them; its faults are run here. */
  network: CellNetwork;
  /** The `maxmemory` the lab's Redis runs under in this cell (set for it, or found), or null: unlimited. */
  memory: Pick<RedisMemoryLimit, "describe"> | null;
  /** The load-generator hosts of this attack (its `loadgenHosts`), or none: the tool runs here. */
  loadgenHosts: Host[];
  /** How the row describes where the server and the load ran. */
  topology: string;
}

export async function measureAttack(
  shared: MeasureRun,
  target: MeasureTarget,
): Promise<{ row: CsvRow; result: NormalizedResult | null }> {
  const { context, sql, streams, status } = shared;
  const { experiment: exp, tool, detection } = context;
  const { cell, attack, plan, servers, trace, rawPath, network, memory } = target;
  const first = servers[0];
  if (first === undefined) throw new RangeError("Cannot measure: no server instance");
  const settings = serverSettings(exp, attack);
  const listFor = (durationS: number, closedRateRps: number | null = null): number => {
    const size = listSize(tool.capabilities.sends, plan, durationS, closedRateRps);
    if (typeof size === "string") throw new RangeError(`Cannot size ${tool.name}'s target list: ${size}`);
    return size;
  };
  const sinceCellMs = () => performance.now() - trace.startedMs;
  try {
    // A previous cell's connection storm must not fail this cell's connects (lab/cell/sockets.ts).
    for (const server of servers) {
      const settled = await settleSockets(server.port);
      if (settled.before >= 10_000) {
        shared.log?.(
          `  waited ${(settled.waitedMs / 1_000).toFixed(1)} s for ${settled.before} TIME_WAIT sockets to port ${server.port} to drain (${settled.left} left)`,
        );
      }
    }
    // The warm-up takes the stream's first segment, the measured run the next: never the same position.
    const warmupList = plan.warmupS > 0 ? listFor(plan.warmupS) : 0;
    let closedRateRps: number | null = null;
    if (plan.warmupS > 0) {
      const targets = streams.slice(plan, 0, warmupList);
      const startMs = sinceCellMs();
      const warmup = await runLoad(tool, plan, target.loadgenHosts, {
        targets,
        durationS: plan.warmupS,
        workDir: rawPath,
        label: "warmup",
        detection,
        signal: shared.signal,
      });
      for (const request of sentRequests(warmup, targets, startMs, plan.keys.seed) ?? []) {
        trace.requests.push(request);
      }
      const { completed, durationS } = warmup.result;
      if (plan.model.kind === "closed" && completed !== null && durationS) {
        closedRateRps = (CLOSED_RATE_MARGIN * completed) / durationS;
      }
    }
    const listTargets = listFor(plan.durationS, closedRateRps);
    const targets = streams.slice(plan, warmupList, listTargets);
    const evictedBefore = memory ? await redisEvictions(shared.redis) : null;
    const beforeEach = await groupStatsWindow(servers);
    const before = beforeEach.sum;
    const usageBefore = groupUsage(servers, beforeEach);
    const callsBefore = await pgStatementCalls(sql);
    const startedMs = performance.now();
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
      serverUrl: first.url,
      serverUrls: servers.map((server) => server.url),
      strategy: cell.strategy,
      settings,
      signal: duringAbort.signal,
      keyspace: plan.keys.keyspace,
      nowMs: sinceCellMs,
    });
    const measuredStartMs = sinceCellMs();
    const startEpochMs = Date.now();
    const faulting = network.runFaults(attack.faults ?? [], startEpochMs, beside.signal);
    let run: ToolRun;
    try {
      run = await runLoad(tool, plan, target.loadgenHosts, {
        targets,
        durationS: plan.durationS,
        workDir: rawPath,
        label: "measured",
        detection,
        signal: shared.signal,
      });
    } finally {
      beside.abort();
      duringAbort.abort();
      status("");
    }
    const [samples, windows] = await Promise.all([polling, faulting]);
    const stale = during ? await during : null;
    const afterEach = await groupStats(servers);
    const after = afterEach.sum;
    const evictedAfter = memory ? await redisEvictions(shared.redis) : null;
    const usageAfter = groupUsage(servers, afterEach);
    const callsAfter = await pgStatementCalls(sql);
    const result = run.result;
    const serverRequests = after.requests - before.requests;
    const inFlight = plan.model.kind === "closed" ? plan.model.connections : plan.maxConnections;
    // pg_stat_statements deltas (not a reset: a reset would break another run's deltas) are the database's
    // own count, used when they agree with the server's.
    const { dbQueries, source: dbQueriesSource } = chooseDbQueries({
      server: after.dbQueries - before.dbQueries,
      probeQueries: after.probeDbQueries - before.probeDbQueries,
      pgDelta: callsBefore !== null && callsAfter !== null ? callsAfter - callsBefore : null,
      inFlight,
    });
    const reads = after.reads - before.reads;
    const hitRatio = readHitRatio(before, after);

    // The independent checks: which stream positions were sent, what the server saw, what a simulation
    // of the same key stream says the caches should have done.
    const sent = result.sent;
    const targetsSent = sent === null ? null : sentCount(sent);
    const reused = sent === null ? null : reusedPositions(sent, listTargets);
    const sentByTool = sentRequests(run, targets, measuredStartMs, plan.keys.seed);
    const measuredRequests = sentByTool && mergeByTime(sentByTool, stale?.probes ?? []);
    const sim =
      measuredRequests === null
        ? null
        : simulate(trace.requests, measuredRequests, {
            strategy: cell.strategy,
            cacheTtlMs: settings.cacheTtlMs,
            l1TtlMs: settings.l1TtlMs,
            l1MaxEntries: settings.l1MaxEntries,
            rows: exp.seed.rows,
            categoryOf: (id) => categoryOf(exp.seed, id),
          });
    for (const request of measuredRequests ?? []) trace.requests.push(request);
    // Distinct stream positions are independent draws: a re-sent position (a declared one, or a sampler's)
    // adds no key, so the expectation is for the positions, and re-sending is judged on its own.
    const distinctExpected =
      targetsSent === null || reused === null
        ? null
        : expectedDistinctKeys(plan, Math.round(targetsSent - reused));
    const distinctKeys = after.distinctKeys;
    const cacheErrors = after.cacheErrors - before.cacheErrors;
    const reasons: string[] = [
      judge(result, {
        maxErrorRatio: exp.maxErrorRatio ?? 0.01,
        serverRequests,
        inFlightAllowance: inFlight,
        shed: counterDelta(before, after, "shed"),
        sheddingExpected: exp.sheddingExpected === true,
      }),
      targetsSent === null || reused === null || distinctExpected === null
        ? `${tool.name} did not say which targets it sent: the stream cannot be checked`
        : judgeStream({
            targetsSent,
            reused,
            allowedReuseRatio: allowedReuseRatio(tool.capabilities.sends, plan),
            distinctKeys,
            distinctKeysExpected: distinctExpected.mean,
            distinctKeysTolerance: distinctKeysTolerance(distinctExpected),
            hitRatio,
            hitRatioExpected: sim?.hitRatio ?? null,
            hitRatioTolerance:
              sent?.kind === "sampled"
                ? sampledHitRatioTolerance(distinctExpected.sd, reads)
                : HIT_RATIO_TOLERANCE,
            cacheErrors,
            faultsDeclared: (attack.faults?.length ?? 0) > 0,
            redisEvictedKeys:
              evictedBefore === null || evictedAfter === null ? null : evictedAfter - evictedBefore,
            faultsReachRedis:
              cell.strategy !== "none" &&
              cell.strategy !== "local" &&
              (attack.faults ?? []).some((fault) => fault.service === "redis"),
            staleChecksFailed: stale?.failed ?? 0,
            staleness:
              stale?.stalenessMs === undefined
                ? null
                : {
                    checks: stale.checks,
                    beyondBound: stale.beyondBound ?? 0,
                    boundMs: stale.boundMs ?? 0,
                    marginMs: stale.marginMs ?? 0,
                  },
          }),
      continuityProblem(beforeEach, afterEach),
    ].filter((reason) => reason !== null);
    const timeline = timelineRows({
      base: {
        run_id: context.runId,
        experiment: context.name,
        strategy: cell.strategy,
        tool: tool.name,
        attack: attack.name,
        repeat: cell.repeat,
      },
      startEpochMs,
      tool: result.timeline,
      noToolSource: `none (${tool.name}): server counters only`,
      samples,
      windows,
    });
    appendTimeline(shared.timelinePath, timeline);
    const outcomes = faultOutcomes(timeline);
    const faultReasons = faultProblems(attack.faults ?? [], windows);
    if (faultReasons !== null) reasons.push(faultReasons);
    // Keys across the deployment: the server's count with one instance; with several each instance counts
    // its own, so the sent stream's (exact for the tools that say which positions they sent).
    const keysAcross = servers.length === 1 ? distinctKeys : (sim?.globalDistinctKeys ?? null);
    const round = (value: number | null, digits = 4) =>
      value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;
    const row = buildRow(context, cell, attack, plan, {
      result,
      listTargets,
      targetsSent,
      targetReuseRatio: targetsSent && reused !== null ? round(reused / targetsSent, 6) : null,
      serverRequests,
      distinctKeys,
      distinctKeysExpected: distinctExpected === null ? null : Math.round(distinctExpected.mean),
      hitRatio: round(hitRatio),
      hitRatioExpected: round(sim?.hitRatio ?? null),
      hitRatioOptimal: round(sim?.optimalHitRatio ?? null),
      l1HitRatio: round(tierRatio(before, after, ["local", "l1"])),
      l2HitRatio: round(tierRatio(before, after, ["redis", "l2"])),
      dbQueries,
      dbQueriesSource,
      dbOffload: serverRequests > 0 ? round(1 - dbQueries / serverRequests) : null,
      cacheErrors,
      staleReads: stale ? stale.staleReads : null,
      staleChecks: stale ? stale.checks : null,
      staleChecksFailed: stale ? stale.failed : null,
      staleness: stale?.stalenessMs === undefined ? null : stalenessFigures(stale),
      shed: counterDelta(before, after, "shed"),
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
      redisEvictedKeys: evictedBefore === null || evictedAfter === null ? null : evictedAfter - evictedBefore,
      serverCpuLimit:
        first.cpuLimit === null || servers.length === 1
          ? first.cpuLimit
          : `each of ${servers.length}: ${first.cpuLimit}`,
      pgDriver: after.pgDriver ?? null,
      redisClient: after.redisClient ?? null,
      instances: servers.length,
      topology: target.topology,
      loadgenHosts: target.loadgenHosts.length,
      instanceRequests: spread(beforeEach, afterEach, "requests"),
      instanceDbQueries: spread(beforeEach, afterEach, "dbQueries"),
      redisMaxmemory: memory?.describe() ?? null,
      faultWorstP99Ms: maxOf(outcomes.map((outcome) => outcome.worstP99Ms)),
      faultFailed: outcomes.length === 0 ? null : sumOf(outcomes.map((outcome) => outcome.failed)),
      faultRecoveryS: maxOf(outcomes.map((outcome) => outcome.recoveryS)),
      timelineRows: timeline.length,
      serverCpuS:
        usageBefore && usageAfter ? Math.round((usageAfter.cpuS - usageBefore.cpuS) * 100) / 100 : null,
      serverRssPeakMb: usageAfter?.rssPeakMb ?? null,
      loadgenCpuS: Number.isFinite(run.cpuS) ? Math.round(run.cpuS * 100) / 100 : null,
      invalidReason: reasons.length === 0 ? null : reasons.join("; "),
      rawPath,
    });
    return { row, result };
  } catch (error) {
    const reason = `tool failed: ${(error as Error).message.split("\n")[0]}`;
    return { row: buildRow(context, cell, attack, plan, failed(reason, rawPath)), result: null };
  }
}
