/**
 * Break-evens from a run's own per-tier costs: the extra cost of a Redis hit beyond which redis stops
 * saving mean latency over none, and the miss cost above which it starts; each with its formula and the
 * values put in. Server-side costs (the srv_* columns, through lab/model) when the rows have them; the
 * client p50s only as a fallback for older rows. The model and its assumptions: docs/card.md ("Break-evens").
 */
import { strategyCosts } from "../model/tier_costs.ts";
import { type Figures, failed } from "./card_rules.ts";
import { median } from "./intervals.ts";
import type { ResultRow } from "./summary.ts";

/** A p50 is a hit's latency only when most requests hit (the client-p50 fallback). */
export const HIT_MAJORITY = 0.5;

export interface TierCosts {
  /** An in-process hit: local's srv_l1_hit_mean_ms (fallback: local's p50). */
  l1Ms: number;
  /** A Redis hit: redis's srv_l2_hit_mean_ms (fallback: redis's p50). */
  redisHitMs: number;
  /** A request served from the database: none's srv_miss_mean_ms, or t_L1 + db_load_ms_mean (fallback: none's p50). */
  missMs: number;
  /** redis's hit ratio. */
  hit: number;
  /** Where the costs come from, said on the card. */
  source: string;
}

/**
 * The tier costs from the server-side columns of the group's rows (lab/model's medians over valid
 * repeats, each outcome from repeats with enough requests of it), or why they cannot be read.
 */
export function serverTierCosts(rows: ResultRow[], figures: Figures[]): TierCosts | string {
  const ok = (name: string) => figures.some((f) => f.strategy === name && !failed(f));
  if (!ok("none") || !ok("local") || !ok("redis")) return "needs valid none, local and redis rows";
  const local = strategyCosts(rows, "local");
  const redis = strategyCosts(rows, "redis");
  const none = strategyCosts(rows, "none");
  if (typeof local === "string" || typeof redis === "string" || typeof none === "string")
    return "needs valid none, local and redis rows";
  const l1Ms = local.outcomesMs.l1_hit;
  const redisHitMs = redis.outcomesMs.l2_hit;
  if (l1Ms === undefined) return `no server-side L1 hit cost: local's ${local.missing.l1_hit}`;
  if (redisHitMs === undefined) return `no server-side Redis hit cost: redis's ${redis.missing.l2_hit}`;
  const hit = redis.hitRatio;
  if (hit === null || hit <= 0) return `redis's hit ratio ${hit ?? "—"}: no Redis hits to weigh`;
  const noneMiss = none.outcomesMs.miss;
  if (noneMiss !== undefined) {
    return { l1Ms, redisHitMs, missMs: noneMiss, hit, source: "server-side means (srv_*_mean_ms)" };
  }
  if (none.dbLoadMs === null)
    return `no server-side miss cost: none's ${none.missing.miss}, and no db_load_ms_mean`;
  return {
    l1Ms,
    redisHitMs,
    missMs: l1Ms + none.dbLoadMs,
    hit,
    source: "server-side means (srv_*_mean_ms; the miss as t_L1 + none's db_load_ms_mean)",
  };
}

/**
 * The tier costs from the client p50s: the fallback for rows without srv_* columns, read only when each
 * p50 is a request of its tier (hit ratios over 0.5) and the p50s are ordered.
 */
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
  return {
    l1Ms,
    redisHitMs,
    missMs,
    hit: redis.hitRatio,
    source: "client p50s (fallback: these rows have no srv_* columns)",
  };
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
 * With E = t_Rhit − t_L1 (the extra cost of a Redis hit) and D = t_miss − t_L1 (the miss cost), redis's
 * mean ≈ t_L1 + h·E + (1 − h)·(2E + D), a miss waiting for its GET and its generation read
 * (lab/model/round_trips.ts), against none's t_L1 + D: redis saves latency while E·(2 − h) < h·D.
 */
export function breakEvens(costs: TierCosts): BreakEven[] {
  const { l1Ms, redisHitMs, missMs, hit } = costs;
  const extra = redisHitMs - l1Ms;
  const load = missMs - l1Ms;
  const extraStar = (hit * load) / (2 - hit);
  const loadStar = (extra * (2 - hit)) / hit;
  const h = hit.toFixed(3);
  return [
    {
      name: "extra cost of a Redis hit beyond which redis stops saving latency over none",
      formula: `E* = h × (t_miss − t_L1) ÷ (2 − h) = ${h} × (${ms(missMs)} − ${ms(l1Ms)}) ÷ (2 − ${h})`,
      valueMs: extraStar,
      verdict: `here E = t_Rhit − t_L1 = ${ms(redisHitMs)} − ${ms(l1Ms)} = ${ms(extra)}: ${extra < extraStar ? "below, redis saves latency" : "at or above, redis saves the database, not latency"}`,
    },
    {
      name: "miss cost above which redis starts saving latency over none",
      formula: `D* = E × (2 − h) ÷ h = ${ms(extra)} × (2 − ${h}) ÷ ${h}`,
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
  const extra = costs.redisHitMs - costs.l1Ms + sibling.addedRedisRttMs;
  const load = costs.missMs - costs.l1Ms + sibling.addedLoadMs;
  const cost = extra * (2 - costs.hit);
  const saving = costs.hit * load;
  const predicted = cost < saving;
  const { redisMeanMs, noneMeanMs } = sibling;
  if (redisMeanMs === null || noneMeanMs === null)
    return `${sibling.name}: not checked, no mean latency of redis and none`;
  const measured = redisMeanMs < noneMeanMs;
  return `${sibling.name}: predicted ${predicted ? "redis saves" : "no saving"} (E·(2 − h) ${ms(cost)} vs h·D ${ms(saving)}, E ${ms(extra)}); measured mean redis ${ms(redisMeanMs)} vs none ${ms(noneMeanMs)}: ${predicted === measured ? "rows agree" : "rows DISAGREE"}`;
}

/** "+0.25 ms each way" in a redis_path/postgres_path: the round trip it adds (twice the one-way delay). */
export function addedRttMs(path: string | null): number | null {
  if (path === null || path === "direct") return 0;
  const match = /\+([\d.]+) ms each way/.exec(path);
  if (match) return 2 * Number(match[1]);
  return path.startsWith("toxiproxy") ? 0 : null;
}
