/**
 * The model of a strategy's server-side mean: Σ over outcomes share(o) × (base mean of o + M × database
 * round trips of o + R × Redis round trips on o's path), with M and R what the target adds per round trip
 * beyond what the base run added, shares from hit ratios and a write ratio. Costs always come from base
 * rows, never from the predicted cell's own means. p99 is not modelled. Formulas: docs/advise.md.
 */
import {
  isStrategy,
  LIST_GENERATION_TRIPS,
  OUTCOMES,
  type Outcome,
  ROUND_TRIPS,
  type Strategy,
} from "./round_trips.ts";
import { numeric, type PathRttMs, type Row, type StrategyCosts, strategyCosts } from "./tier_costs.ts";

export const P99_NOTE = "p99 is not modelled: the model predicts server-side means only";

/** What a prediction is for. Hit ratios are shares of reads; write and list shares of requests / reads. */
export interface Target {
  /** Added per database round trip, ms (Toxiproxy's miss cost; 0 when direct). */
  missCostMs: number;
  /** Added per Redis round trip, ms. */
  redisRttMs: number;
  /** Reads answered without a load (redis: from Redis; two_tier, tracking: from L1 or L2; local: from L1). */
  hitRatio: number | null;
  /** Reads answered in process (two_tier's and tracking's L1, local's cache); local falls back to hitRatio. */
  l1HitRatio: number | null;
  writeRatio: number;
  /** Of the reads, the list pages (GET /products?category=…): each reads its category generation first. */
  listShare: number;
  /**
   * A measured row's round trips through its proxies as delivered: where the target and the base both have
   * one, their difference is what the target adds, not the plan's nominal figures (Toxiproxy delivers more).
   */
  pathRttMs?: PathRttMs;
}

/** What the target adds per round trip: delivered (both measured), else as planned. */
function added(nominalMs: number, baseNominalMs: number, targetRtt?: number | null, baseRtt?: number | null) {
  if (targetRtt != null && baseRtt != null) return targetRtt - baseRtt;
  return nominalMs - baseNominalMs;
}

/** The share of requests each outcome takes for `strategy`, or why it cannot be told. */
export function outcomeShares(strategy: Strategy, target: Target): Record<Outcome, number> | string {
  const reads = 1 - target.writeRatio;
  const shares: Record<Outcome, number> = { l1_hit: 0, l2_hit: 0, miss: 0, write: target.writeRatio };
  if (strategy === "none") {
    shares.miss = reads;
    return shares;
  }
  if (strategy === "local") {
    const h1 = target.l1HitRatio ?? target.hitRatio;
    if (h1 === null) return "local: no hit ratio (hit_ratio_expected) for the target";
    return { ...shares, l1_hit: reads * h1, miss: reads * (1 - h1) };
  }
  const h = target.hitRatio;
  if (h === null) return `${strategy}: no hit ratio (hit_ratio_expected) for the target`;
  if (strategy === "redis") return { ...shares, l2_hit: reads * h, miss: reads * (1 - h) };
  const h1 = target.l1HitRatio;
  if (h1 === null) return `${strategy}: no L1 hit ratio (l1_hit_ratio_expected) for the target`;
  if (h1 > h + 1e-9) return `${strategy}: L1 hit ratio ${h1} above the hit ratio ${h}`;
  return { ...shares, l1_hit: reads * h1, l2_hit: reads * Math.max(0, h - h1), miss: reads * (1 - h) };
}

export interface Term {
  outcome: Outcome;
  share: number;
  baseMs: number;
  db: number;
  redisOnPath: number;
  /** share × (baseMs + ΔM × db + ΔR × redisOnPath). */
  ms: number;
  /** Set when baseMs is an estimate rather than a measured mean, saying how. */
  estimated: string | null;
}

export interface StrategyPrediction {
  strategy: Strategy;
  meanMs: number;
  /** meanMs = interceptMs + slopeMissMs × missCostMs + slopeRedisMs × redisRttMs (linear in both). */
  interceptMs: number;
  slopeMissMs: number;
  slopeRedisMs: number;
  terms: Term[];
  dbQueriesPerRequest: number;
  redisCmdsPerRequest: number;
  /** The formula with the numbers put in. */
  formula: string;
}

/**
 * A write's mean when the base rows had none: its own miss with the miss's Redis round trips replaced by
 * the write's, at the measured Redis command mean (an UPDATE taken to cost what a SELECT does).
 */
function estimatedWrite(costs: StrategyCosts): { ms: number; how: string } | string {
  const miss = costs.outcomesMs.miss;
  const missTrips = ROUND_TRIPS[costs.strategy].miss as NonNullable<(typeof ROUND_TRIPS)["none"]["miss"]>;
  const writeTrips = ROUND_TRIPS[costs.strategy].write as typeof missTrips;
  if (miss === undefined) return `${costs.strategy}: no write cost and no miss cost to estimate it from`;
  const delta = writeTrips.redisOnPath - missTrips.redisOnPath;
  if (delta === 0) return { ms: miss, how: "no writes in the base rows: a write taken to cost a miss" };
  if (costs.redisCmdMs === null)
    return `${costs.strategy}: no write cost, and no redis_cmd_mean_ms to estimate it from its miss`;
  return {
    ms: miss + delta * costs.redisCmdMs,
    how: `no writes in the base rows: a miss ${delta > 0 ? "+" : "−"} ${Math.abs(delta)} Redis command(s) of ${costs.redisCmdMs} ms`,
  };
}

/** The prediction for one strategy from its base costs, or why there is none. */
export function predictStrategy(costs: StrategyCosts, target: Target): StrategyPrediction | string {
  const { strategy } = costs;
  const shares = outcomeShares(strategy, target);
  if (typeof shares === "string") return shares;
  const path = target.pathRttMs;
  const dM = added(target.missCostMs, costs.addedMissMs, path?.postgres, costs.pathRttMs.postgres);
  const dR = added(target.redisRttMs, costs.addedRedisRttMs, path?.redis, costs.pathRttMs.redis);
  const terms: Term[] = [];
  const list = LIST_GENERATION_TRIPS[strategy];
  const reads = 1 - target.writeRatio;
  for (const outcome of OUTCOMES) {
    const trips = ROUND_TRIPS[strategy][outcome];
    const share = shares[outcome];
    if (trips === undefined || share === 0) continue;
    let baseMs = costs.outcomesMs[outcome];
    let estimated: string | null = null;
    if (baseMs === undefined && outcome === "write") {
      const estimate = estimatedWrite(costs);
      if (typeof estimate === "string") return estimate;
      baseMs = estimate.ms;
      estimated = estimate.how;
    }
    if (baseMs === undefined)
      return `${strategy}: no ${outcome} cost: ${costs.missing[outcome] ?? "unknown"}`;
    // A list read waits for its category generation too (LIST_GENERATION_TRIPS), whatever its outcome.
    const listTrips = outcome === "write" || reads === 0 ? 0 : target.listShare;
    const redisOnPath = trips.redisOnPath + listTrips * list.redisOnPath;
    terms.push({
      outcome,
      share,
      baseMs,
      db: trips.db,
      redisOnPath,
      ms: share * (baseMs + dM * trips.db + dR * redisOnPath),
      estimated,
    });
  }
  const sum = (f: (t: Term) => number) => terms.reduce((total, t) => total + f(t), 0);
  const slopeMissMs = sum((t) => t.share * t.db);
  const slopeRedisMs = sum((t) => t.share * t.redisOnPath);
  const interceptMs =
    sum((t) => t.share * t.baseMs) - slopeMissMs * costs.addedMissMs - slopeRedisMs * costs.addedRedisRttMs;
  const commands = sum((t) => t.share * (ROUND_TRIPS[strategy][t.outcome]?.redisCommands ?? 0));
  const listCommands = reads * target.listShare * list.redisCommands;
  const num = (v: number) => String(Number(v.toFixed(4)));
  const formula = terms
    .map((t) => {
      const added = [
        t.db > 0 ? ` + ${num(dM)}×${t.db}` : "",
        t.redisOnPath > 0 ? ` + ${num(dR)}×${num(t.redisOnPath)}` : "",
      ].join("");
      return `${num(t.share)}×(${num(t.baseMs)}${added})`;
    })
    .join(" + ");
  return {
    strategy,
    meanMs: sum((t) => t.ms),
    interceptMs,
    slopeMissMs,
    slopeRedisMs,
    terms,
    dbQueriesPerRequest: slopeMissMs,
    redisCmdsPerRequest: commands + listCommands,
    formula,
  };
}

const WRITE_METHOD = /^(PUT|POST|PATCH|DELETE) /;

/** The write share of requests and the list share of reads in a row's request_mix ("name:w:METHOD path | …"). */
export function mixShares(requestMix: unknown): { writeRatio: number; listShare: number } | null {
  if (typeof requestMix !== "string" || requestMix.trim() === "") return null;
  let total = 0;
  let writes = 0;
  let lists = 0;
  for (const part of requestMix.split(" | ")) {
    const match = /^[^:]*:([\d.]+):(.+)$/.exec(part.trim());
    if (!match) return null;
    const weight = Number(match[1]);
    const request = match[2] as string;
    total += weight;
    if (WRITE_METHOD.test(request)) writes += weight;
    else if (/^GET \/products\?/.test(request)) lists += weight;
  }
  if (!(total > 0)) return null;
  const reads = total - writes;
  return { writeRatio: writes / total, listShare: reads > 0 ? lists / reads : 0 };
}

/** A target row's plan and simulation values as a Target (M and R default to 0: direct paths). */
export function targetOf(row: Row): Target | string {
  const mix = mixShares(row.request_mix);
  if (mix === null) return `request_mix not understood: ${String(row.request_mix)}`;
  return {
    missCostMs: numeric(row.miss_cost_ms) ?? 0,
    redisRttMs: numeric(row.redis_rtt_ms) ?? 0,
    hitRatio: numeric(row.hit_ratio_expected),
    l1HitRatio: numeric(row.l1_hit_ratio_expected),
    pathRttMs: { postgres: numeric(row.postgres_path_rtt_ms), redis: numeric(row.redis_path_rtt_ms) },
    ...mix,
  };
}

export type RowPrediction =
  | { predictedMeanMs: number; predictedFrom: string; reason: null }
  | { predictedMeanMs: null; predictedFrom: null; reason: string };

function none(reason: string): RowPrediction {
  return { predictedMeanMs: null, predictedFrom: null, reason };
}

/**
 * What main writes into a row's predicted_mean_ms / predicted_from: the target row's strategy predicted
 * at its plan (miss_cost_ms, redis_rtt_ms, request_mix) and simulation (hit_ratio_expected,
 * l1_hit_ratio_expected) from base rows: by default the `<attack>_base` cells of the same run among
 * `runRows` (the run's rows so far), or with `from` the named earlier run's rows (its `<attack>_base`
 * cells if it has them, else `from.attack`, else the target's attack). A base cell itself gets no
 * prediction: its costs are the model's input.
 */
export function predictRow(
  runRows: Row[],
  target: Row,
  options: { from?: { rows: Row[]; runId: string; attack?: string } } = {},
): RowPrediction {
  const strategy = target.strategy;
  if (!isStrategy(strategy)) return none(`unknown strategy ${String(strategy)}`);
  const attack = String(target.attack ?? "");
  if (attack.endsWith("_base")) return none(`${attack} is a base cell: its costs are the model's input`);
  const from = options.from;
  const runId = from ? from.runId : String(target.run_id ?? "");
  const pool = (from ? from.rows : runRows).filter((row) => String(row.run_id ?? "") === runId);
  const twin = `${attack}_base`;
  const baseAttack = pool.some((row) => row.attack === twin) ? twin : from ? (from.attack ?? attack) : null;
  if (baseAttack === null)
    return none(`no ${twin} cells in run ${runId} (nothing added, no base to predict from)`);
  const base = pool.filter((row) => row.attack === baseAttack);
  const costs = strategyCosts(base, strategy);
  if (typeof costs === "string") return none(`${baseAttack} of run ${runId}: ${costs}`);
  const wanted = targetOf(target);
  if (typeof wanted === "string") return none(wanted);
  const prediction = predictStrategy(costs, wanted);
  if (typeof prediction === "string") return none(`${baseAttack} of run ${runId}: ${prediction}`);
  return {
    predictedMeanMs: prediction.meanMs,
    predictedFrom: `${baseAttack} of run ${runId} (${costs.repeats} valid repeat${costs.repeats === 1 ? "" : "s"})`,
    reason: null,
  };
}
