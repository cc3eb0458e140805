/**
 * What each tier cost in the measured run, as the server timed it (server/tier_timer.ts): requests by
 * outcome (an in-process hit, a Redis hit, a miss with its load, a join of another's load, a write) and each Redis command, between two
 * /stats snapshots of every instance, merged exactly from their histograms.
 */
import { type LoadTimes, loadTimesBetween } from "../../server/load_timer.ts";
import type { Outcome } from "../../server/tier_timer.ts";
import type { GroupStats } from "./instances.ts";

/** The outcomes that answered a request: their time is what a tier costs. */
export const ANSWERED = ["l1_hit", "l2_hit", "miss", "join", "write"] as const satisfies readonly Outcome[];
export type Answered = (typeof ANSWERED)[number];

export interface ServerTiming {
  /**
   * Per answered outcome, of the requests timed (one in TIER_TIMING); null when the servers do not time
   * requests (an older server, TIER_TIMING=0).
   */
  requests: Record<Answered, LoadTimes | null>;
  /** Every request answered by outcome, timed or not (the timed ones' count from a server that counts no more). */
  counts: Record<Answered, number | null>;
  /** The answered outcomes together: the server-side mean a request cost. */
  answered: LoadTimes | null;
  redisCommands: LoadTimes | null;
}

export function serverTimingBetween(beforeEach: GroupStats, afterEach: GroupStats): ServerTiming {
  const requestsOf = (group: GroupStats) => group.each.map((stats) => stats.requestMs);
  const between = (kinds: readonly Answered[]) =>
    loadTimesBetween(requestsOf(beforeEach), requestsOf(afterEach), kinds);
  const requests = Object.fromEntries(ANSWERED.map((outcome) => [outcome, between([outcome])])) as Record<
    Answered,
    LoadTimes | null
  >;
  // A server from before joins were counted apart has no `join`: its answered requests are the others.
  const present = ANSWERED.filter((outcome) => afterEach.each.every((stats) => stats.requestMs?.[outcome]));
  const answered = between(present);
  const commandsOf = (group: GroupStats) =>
    group.each.map((stats) => (stats.redisCommandMs ? { redis: stats.redisCommandMs } : undefined));
  const redisCommands = loadTimesBetween(commandsOf(beforeEach), commandsOf(afterEach), ["redis"]);
  const countOf = (outcome: Answered) => {
    const counted = countBetween(beforeEach, afterEach, outcome);
    return counted === undefined ? (requests[outcome]?.count ?? null) : counted;
  };
  const counts = Object.fromEntries(ANSWERED.map((outcome) => [outcome, countOf(outcome)])) as Record<
    Answered,
    number | null
  >;
  // A server that times nothing (TIER_TIMING=0) says nothing: requests answered, none counted or timed.
  const untimed = answered !== null && answered.count === 0 && ANSWERED.every((outcome) => !counts[outcome]);
  const none = { l1_hit: null, l2_hit: null, miss: null, join: null, write: null };
  return {
    requests: untimed ? none : requests,
    counts: untimed ? none : counts,
    answered: untimed ? null : answered,
    redisCommands: untimed ? null : redisCommands,
  };
}

/**
 * An outcome's requests between the snapshots, summed over the instances: undefined when a server counts none
 * but those it timed (an older server), null when a count went backwards (a restart between them).
 */
function countBetween(
  beforeEach: GroupStats,
  afterEach: GroupStats,
  outcome: Answered,
): number | null | undefined {
  let total = 0;
  for (let i = 0; i < afterEach.each.length; i++) {
    const a = beforeEach.each[i]?.requestCounts?.[outcome];
    const b = afterEach.each[i]?.requestCounts?.[outcome];
    if (a === undefined || b === undefined) return undefined;
    if (b < a) return null;
    total += b - a;
  }
  return total;
}
