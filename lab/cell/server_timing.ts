/**
 * What each tier cost in the measured run, as the server timed it (server/tier_timer.ts): requests by
 * outcome (an in-process hit, a Redis hit, a miss with its load, a write) and each Redis command, between two
 * /stats snapshots of every instance, merged exactly from their histograms.
 */
import { type LoadTimes, loadTimesBetween } from "../../server/load_timer.ts";
import type { Outcome } from "../../server/tier_timer.ts";
import type { GroupStats } from "./instances.ts";

/** The outcomes that answered a request: their time is what a tier costs. */
export const ANSWERED = ["l1_hit", "l2_hit", "miss", "write"] as const satisfies readonly Outcome[];
export type Answered = (typeof ANSWERED)[number];

export interface ServerTiming {
  /** Per answered outcome; null when the servers do not time requests (an older server, TIER_TIMING=0). */
  requests: Record<Answered, LoadTimes | null>;
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
  const answered = between(ANSWERED);
  const commandsOf = (group: GroupStats) =>
    group.each.map((stats) => (stats.redisCommandMs ? { redis: stats.redisCommandMs } : undefined));
  const redisCommands = loadTimesBetween(commandsOf(beforeEach), commandsOf(afterEach), ["redis"]);
  // A server that times nothing (TIER_TIMING=0) says nothing: no request timed while requests were answered.
  const untimed = answered !== null && answered.count === 0;
  return {
    requests: untimed ? { l1_hit: null, l2_hit: null, miss: null, write: null } : requests,
    answered: untimed ? null : answered,
    redisCommands: untimed ? null : redisCommands,
  };
}
