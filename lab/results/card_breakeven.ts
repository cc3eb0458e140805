/**
 * Break-evens from a run's own per-tier costs: the Redis round trip beyond which redis stops saving mean
 * latency over none, and the miss cost above which it starts; each with its formula and the values put in.
 * The model and its assumptions are in docs/card.md ("Break-evens").
 */
import { type Figures, failed } from "./card_rules.ts";
import { median } from "./intervals.ts";

/** A p50 is a hit's latency only when most requests hit. */
export const HIT_MAJORITY = 0.5;

export interface TierCosts {
  /** An L1 hit: local's p50, the server's own cost with no hop. */
  l1Ms: number;
  /** A Redis hit: redis's p50. */
  redisHitMs: number;
  /** A request served from the database: none's p50. */
  missMs: number;
  /** redis's hit ratio. */
  hit: number;
}

/** The tier costs, or why they cannot be read from these figures. */
export function tierCosts(figures: Figures[]): TierCosts | string {
  const by = (name: string): Figures | undefined => figures.find((f) => f.strategy === name && !failed(f));
  const none = by("none");
  const local = by("local");
  const redis = by("redis");
  if (!none || !local || !redis) return "needs valid none, local and redis rows";
  const localHit = local.l1HitRatio ?? local.hitRatio;
  if (localHit === null || localHit <= HIT_MAJORITY)
    return `local's hit ratio ${localHit ?? "—"} ≤ 0.5: its p50 is not an L1 hit`;
  if (redis.hitRatio === null || redis.hitRatio <= HIT_MAJORITY)
    return `redis's hit ratio ${redis.hitRatio ?? "—"} ≤ 0.5: its p50 is not a Redis hit`;
  const l1Ms = median(local.p50Ms);
  const redisHitMs = median(redis.p50Ms);
  const missMs = median(none.p50Ms);
  if (l1Ms === null || redisHitMs === null || missMs === null) return "a p50 is missing";
  // An L1 hit slower than a Redis hit (or a hit slower than a miss) is the run's noise, not a tier's cost.
  if (!(l1Ms < redisHitMs && redisHitMs < missMs)) {
    return `the p50s are not ordered L1 hit < Redis hit < miss (local ${ms(l1Ms)}, redis ${ms(redisHitMs)}, none ${ms(missMs)}): the run's noise is larger than a tier's cost`;
  }
  return { l1Ms, redisHitMs, missMs, hit: redis.hitRatio };
}

export interface BreakEven {
  name: string;
  formula: string;
  valueMs: number;
  /** This run's own value of the quantity, and what the comparison says. */
  verdict: string;
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}

/**
 * redis's mean latency ≈ t_L1 + RTT + (1 − h)·D against none's t_L1 + D, with RTT = t_Rhit − t_L1 (a Redis
 * round trip) and D = t_miss − t_L1 (a database load): redis saves latency while RTT < h·D.
 */
export function breakEvens(costs: TierCosts): BreakEven[] {
  const { l1Ms, redisHitMs, missMs, hit } = costs;
  const rtt = redisHitMs - l1Ms;
  const load = missMs - l1Ms;
  const rttStar = hit * load;
  const loadStar = rtt / hit;
  const h = hit.toFixed(3);
  return [
    {
      name: "Redis round trip beyond which redis stops saving latency over none",
      formula: `RTT* = h × (t_miss − t_L1) = ${h} × (${ms(missMs)} − ${ms(l1Ms)})`,
      valueMs: rttStar,
      verdict: `here RTT = t_Rhit − t_L1 = ${ms(redisHitMs)} − ${ms(l1Ms)} = ${ms(rtt)}: ${rtt < rttStar ? "below, redis saves latency" : "at or above, redis saves the database, not latency"}`,
    },
    {
      name: "miss cost above which redis starts saving latency over none",
      formula: `D* = RTT ÷ h = ${ms(rtt)} ÷ ${h}`,
      valueMs: loadStar,
      verdict: `here D = t_miss − t_L1 = ${ms(load)}: ${load > loadStar ? "above, redis saves latency" : "at or below, redis does not"}`,
    },
  ];
}

/** What a sibling workload adds to the reference one: round trip to Redis and to the database, in ms. */
export interface SiblingShift {
  name: string;
  addedRedisRttMs: number;
  addedLoadMs: number;
  /** Measured there: redis's and none's median mean latency. */
  redisMeanMs: number | null;
  noneMeanMs: number | null;
}

/**
 * The break-even checked against rows that move it on purpose (network_rtt: a longer round trip; miss_cost:
 * a dearer miss): the reference costs shifted by what the sibling adds predict whether redis beats none
 * there; the sibling's own mean latencies say whether it did.
 */
export function checkSibling(costs: TierCosts, sibling: SiblingShift): string {
  const rtt = costs.redisHitMs - costs.l1Ms + sibling.addedRedisRttMs;
  const load = costs.missMs - costs.l1Ms + sibling.addedLoadMs;
  const predicted = rtt < costs.hit * load;
  const { redisMeanMs, noneMeanMs } = sibling;
  if (redisMeanMs === null || noneMeanMs === null)
    return `${sibling.name}: not checked, no mean latency of redis and none`;
  const measured = redisMeanMs < noneMeanMs;
  return `${sibling.name}: predicted ${predicted ? "redis saves" : "no saving"} (RTT ${ms(rtt)} vs h·D ${ms(costs.hit * load)}); measured mean redis ${ms(redisMeanMs)} vs none ${ms(noneMeanMs)}: ${predicted === measured ? "rows agree" : "rows DISAGREE"}`;
}

/** "+0.25 ms each way" in a redis_path/postgres_path: the round trip it adds (twice the one-way delay). */
export function addedRttMs(path: string | null): number | null {
  if (path === null || path === "direct") return 0;
  const match = /\+([\d.]+) ms each way/.exec(path);
  if (match) return 2 * Number(match[1]);
  return path.startsWith("toxiproxy") ? 0 : null;
}
