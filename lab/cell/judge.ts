/**
 * Whether a measured run can be trusted: the tool's counts (errors, dropped load, the server's own count), and
 * the stream (re-sent targets, distinct keys, the hit ratio against its simulation, swallowed cache errors,
 * failed stale-read checks). A run that cannot is written invalid with every reason. streamChecks gathers that
 * evidence for one measured attack (its sent positions, its simulation), judgeRun reads it.
 */
import { categoryOf } from "../../seed/seed.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { seedFor } from "../plan/experiment_plan.ts";
import {
  allowedReuseRatio,
  distinctKeysTolerance,
  expectedDistinctKeys,
  reusedPositions,
  sentCount,
} from "../plan/segments.ts";
import { distinctReads } from "../sim/distinct_reads.ts";
import { type SimRequest, simulate } from "../sim/simulate.ts";
import { mergeByTime, sentRequests } from "./cell_trace.ts";
import { counterDelta } from "./counters.ts";
import { continuityProblem } from "./instances.ts";
import type { Counted, MeasureRun, MeasureTarget, StreamChecks, WarmupCount } from "./measurement.ts";
import { missCostProblem } from "./miss_cost.ts";
import { otherCpu, otherCpuProblem } from "./other_cpu.ts";

/** Why a measured result cannot be trusted, or null. */
export function judge(
  result: NormalizedResult,
  context: {
    maxErrorRatio: number;
    /** The server's own count of the run's requests; null: the target is not a cachelab server, no check. */
    serverRequests: number | null;
    inFlightAllowance: number;
    /**
     * The server's own count of requests it shed (503), when it has the counter; with `sheddingExpected`
     * they are the outcome measured, not errors, but the tool's 503s must match that count.
     */
    shed?: number | null;
    sheddingExpected?: boolean;
  },
): string | null {
  if (result.completed === null || result.ok === null) return "the tool reported no completed/ok counts";
  const transportErrors = Object.values(result.errorCounts ?? {}).reduce((a, b) => a + b, 0);
  const attempted = result.completed + transportErrors;
  if (attempted === 0) return "no requests were answered";
  const shed503 = result.statusCounts?.["503"] ?? null;
  const shed = context.shed ?? null;
  if (shed !== null && shed503 !== null && Math.abs(shed503 - shed) > context.inFlightAllowance) {
    return `the server shed ${shed} requests but the tool counted ${shed503} 503s`;
  }
  if (shed !== null && shed > 0 && shed503 === null) {
    return `the server shed ${shed} requests but ${result.tool} cannot count 503s: the shed cannot be checked`;
  }
  const excused = context.sheddingExpected ? (shed503 ?? 0) : 0;
  const errors = result.completed - result.ok + transportErrors - excused;
  if (errors / attempted > context.maxErrorRatio) {
    return `error ratio ${(errors / attempted).toFixed(4)} > ${context.maxErrorRatio} (${errors} of ${attempted})`;
  }
  if (
    result.offeredRps !== null &&
    result.achievedRps !== null &&
    result.achievedRps < 0.95 * result.offeredRps
  ) {
    return `dropped load: achieved ${result.achievedRps.toFixed(1)} rps < 95% of offered ${result.offeredRps.toFixed(1)}`;
  }
  if (
    context.serverRequests !== null &&
    Math.abs(context.serverRequests - result.completed) > context.inFlightAllowance
  ) {
    return `the server counted ${context.serverRequests} requests but the tool ${result.completed}`;
  }
  return null;
}

/**
 * The allowed gap between a measured hit ratio and the simulation of the same key stream, for a tool that
 * says exactly which targets it sent. A sampling tool (oha) does not: its simulation runs on an emulated
 * draw, and the gap may also hold the two draws' difference (see `sampledHitRatioTolerance`).
 */
export const HIT_RATIO_TOLERANCE = 0.02;

/**
 * The tolerance for a sampling tool: its real and emulated draws each find a number of new keys with
 * standard deviation ≈ `distinctSd` (of `reads` draws), so their hit ratios differ by up to 4·√2·sd ÷ reads.
 */
export function sampledHitRatioTolerance(distinctSd: number, reads: number): number {
  return reads > 0
    ? Math.max(HIT_RATIO_TOLERANCE, (4 * Math.SQRT2 * distinctSd) / reads)
    : HIT_RATIO_TOLERANCE;
}

/** What a measured run is checked against besides its tool's counts. */
export interface StreamEvidence {
  targetsSent: number;
  reused: number;
  /** The re-sent share the run may have: 0, a sampler's tolerance, or what the experiment declares. */
  allowedReuseRatio: number;
  distinctKeys: number;
  distinctKeysExpected: number;
  distinctKeysTolerance: number;
  hitRatio: number | null;
  hitRatioExpected: number | null;
  hitRatioTolerance: number;
  cacheErrors: number;
  faultsDeclared: boolean;
  /** Keys the lab's Redis evicted during the run (under a maxmemory), or null when not counted. */
  redisEvictedKeys?: number | null;
  /** Faults hit Redis and the strategy uses it: some Redis calls must have failed. */
  faultsReachRedis: boolean;
  staleChecksFailed: number;
  /** A staleness checker ran: how many checks it completed, and readers past the strategy's bound. */
  staleness?: { checks: number; beyondBound: number; boundMs: number; marginMs: number } | null;
}

/** Why the run was not the fresh, clean stream it claims to be, or null. */
export function judgeStream(evidence: StreamEvidence): string | null {
  const reasons: string[] = [];
  const e = evidence;
  if (e.targetsSent > 0 && e.reused / e.targetsSent > e.allowedReuseRatio) {
    reasons.push(
      `re-sent targets: ${e.reused} of ${e.targetsSent} requests repeated a stream position ` +
        `(ratio ${(e.reused / e.targetsSent).toFixed(4)} > ${e.allowedReuseRatio})`,
    );
  }
  if (Math.abs(e.distinctKeys - e.distinctKeysExpected) > e.distinctKeysTolerance) {
    reasons.push(
      `distinct keys: the server saw ${e.distinctKeys}, a fresh stream of ${Math.round(e.targetsSent - e.reused)} requests gives ` +
        `${e.distinctKeysExpected.toFixed(0)} ± ${e.distinctKeysTolerance.toFixed(0)}`,
    );
  }
  // The simulation models healthy caches with an unbounded Redis: a fault, or Redis evicting under its
  // maxmemory, can only take hits away, so then the check is one-sided (a hit ratio above the simulation is
  // still impossible, and a shortfall needs the faults or evictions that explain it).
  if (e.hitRatio !== null && e.hitRatioExpected !== null) {
    const excess = e.hitRatio - e.hitRatioExpected;
    const hitsCanBeLost = e.faultsDeclared || (e.redisEvictedKeys ?? 0) > 0;
    if (excess > e.hitRatioTolerance || (!hitsCanBeLost && -excess > e.hitRatioTolerance)) {
      reasons.push(
        `hit ratio ${e.hitRatio.toFixed(3)} deviates from the simulation of the same key stream ` +
          `(${e.hitRatioExpected.toFixed(3)}) by more than ${e.hitRatioTolerance.toFixed(3)}`,
      );
    }
  }
  if (e.cacheErrors > 0 && !e.faultsDeclared) {
    reasons.push(`${e.cacheErrors} cache errors were swallowed (the attack injects no faults)`);
  }
  if (e.faultsReachRedis && e.cacheErrors === 0) {
    reasons.push("the Redis faults never reached the server: 0 cache errors while Redis was down or hung");
  }
  if (e.staleChecksFailed > 0) reasons.push(`${e.staleChecksFailed} stale-read checks failed`);
  if (e.staleness) {
    const { checks, beyondBound, boundMs, marginMs } = e.staleness;
    if (checks === 0) reasons.push("the staleness checker completed no check: the windows are unmeasured");
    if (beyondBound > 0) {
      reasons.push(
        `${beyondBound} checker reads saw the old row past the strategy's staleness bound (${boundMs} ms + ${marginMs} ms margin)`,
      );
    }
  }
  return reasons.length === 0 ? null : reasons.join("; ");
}

/** The run's sent positions, and a simulation of the same key stream (the trace grows by the measured run). */
export function streamChecks(shared: MeasureRun, target: MeasureTarget, counted: Counted): StreamChecks {
  const exp = shared.context.experiment;
  const { cell, plan, trace } = target;
  const sent = counted.run.result.sent;
  const targetsSent = sent === null ? null : sentCount(sent);
  const reused = sent === null ? null : reusedPositions(sent, counted.listTargets);
  const sentByTool = sentRequests(counted.run, counted.targets, counted.measuredStartMs, plan.keys.seed);
  const measuredRequests = sentByTool && mergeByTime(sentByTool, counted.stale?.probes ?? []);
  const sim =
    measuredRequests === null
      ? null
      : simulate(trace.requests, measuredRequests, {
          strategy: cell.strategy,
          cacheTtlMs: cell.settings.cacheTtlMs,
          l1TtlMs: cell.settings.l1TtlMs,
          l1MaxEntries: cell.settings.l1MaxEntries,
          rows: seedFor(exp, target.attack).rows,
          categoryOf: (id) => categoryOf(seedFor(exp, target.attack), id),
        });
  for (const request of measuredRequests ?? []) trace.requests.push(request);
  // Distinct stream positions are independent draws: a re-sent position (a declared one, or a sampler's)
  // adds no key, so the expectation is for the positions, and re-sending is judged on its own.
  const distinctExpected =
    targetsSent === null || reused === null || sentByTool === null
      ? null
      : distinctExpectation(plan, sentByTool, targetsSent - reused);
  return { targetsSent, reused, distinctExpected, sim };
}

/**
 * The distinct keys the servers should count for `positions` fresh stream positions, and the tolerance: a
 * draw's expectation, or for a trace (not a draw) the exact count of those `sent`, as long as the servers
 * count exactly (DistinctKeys: up to 131 072 per instance, then an estimate within about 1%, given 3%).
 */
export function distinctExpectation(
  plan: AttackPlan,
  sent: SimRequest[],
  positions: number,
): { mean: number; sd: number; tolerance: number } {
  if (plan.keys.distribution.kind !== "trace") {
    const expected = expectedDistinctKeys(plan, Math.round(positions));
    return { ...expected, tolerance: distinctKeysTolerance(expected) };
  }
  const mean = distinctReads(sent);
  return { mean, sd: 0, tolerance: mean > 131_072 ? 0.03 * mean : 0 };
}

/**
 * The simulation starts from the requests the tool says its warm-up sent: the server must have counted
 * every answered one and no more than were sent (a timed-out request may or may not have arrived).
 */
export function warmupCountProblem(count: WarmupCount | null): string | null {
  if (count === null || (count.server >= count.completed && count.server <= count.sent)) return null;
  return (
    `the warm-up: the server counted ${count.server} requests, the tool ${count.completed} answered of ` +
    `${count.sent} sent: the simulation does not start from what the server saw`
  );
}

/** Why the run cannot be trusted: the tool's counts, the stream, the instances' continuity; none: valid. */
export function judgeRun(shared: MeasureRun, target: MeasureTarget, m: Counted & StreamChecks): string[] {
  const { experiment: exp, tool } = shared.context;
  const { cell, attack, plan } = target;
  const before = m.beforeEach.sum;
  const after = m.afterEach.sum;
  const { targetsSent, reused, distinctExpected, stale } = m;
  const sent = m.run.result.sent;
  return [
    judge(m.run.result, {
      maxErrorRatio: exp.maxErrorRatio ?? 0.01,
      serverRequests: m.serverRequests,
      inFlightAllowance: m.inFlight,
      shed: counterDelta(before, after, "shed"),
      sheddingExpected: exp.sheddingExpected === true,
    }),
    targetsSent === null || reused === null || distinctExpected === null
      ? `${tool.name} did not say which targets it sent: the stream cannot be checked`
      : judgeStream({
          targetsSent,
          reused,
          allowedReuseRatio: allowedReuseRatio(tool.capabilities.sends, plan),
          distinctKeys: after.distinctKeys,
          distinctKeysExpected: distinctExpected.mean,
          distinctKeysTolerance: distinctExpected.tolerance,
          hitRatio: m.hitRatio,
          hitRatioExpected: m.sim?.hitRatio ?? null,
          hitRatioTolerance:
            sent?.kind === "sampled"
              ? sampledHitRatioTolerance(distinctExpected.sd, m.reads)
              : HIT_RATIO_TOLERANCE,
          cacheErrors: m.cacheErrors,
          faultsDeclared: (attack.faults?.length ?? 0) > 0,
          redisEvictedKeys: m.redisEvictedKeys,
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
    warmupCountProblem(m.warmupCount),
    continuityProblem(m.beforeEach, m.afterEach),
    missCostProblem(m.missCost),
    otherCpuProblem(otherCpu(m.serviceCpu.before, m.serviceCpu.after), shared.context.machine.cpuCount),
  ].filter((reason) => reason !== null);
}
