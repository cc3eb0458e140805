/**
 * The model of a strategy's server-side latency: the mean is Σ over outcomes share(o) × (base mean of o +
 * M × database round trips of o + R × Redis round trips on o's path), with M and R what the target adds per
 * round trip beyond what the base run added, shares from hit ratios and a write ratio; the p99 is the same
 * mixture taken over each outcome's measured distribution (each shifted by what it adds), never a sum of
 * p99s; a miss also waits for the database pool when the target's rate keeps it busier than the base's
 * (Erlang C). Costs always come from base rows, never from the predicted cell's own. Rows: predict_row.ts.
 * docs/advise.md.
 */
import { type Component, convolve, mixturePercentilesMs, type Points } from "./histogram.ts";
import { type Wait, waitOf, waitPoints } from "./queueing.ts";
import { LIST_GENERATION_TRIPS, OUTCOMES, type Outcome, ROUND_TRIPS, type Strategy } from "./round_trips.ts";
import type { StrategyCosts } from "./tier_costs.ts";

/** Past this utilisation of the database pool the model says "outside the model" rather than a number. */
export const MAX_POOL_RHO = 0.9;

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
  /** Requests a second, for the pool's queueing; null or absent: no queueing term (a closed model). */
  rateRps?: number | null;
  /** The server's Postgres pool; absent: the base run's. */
  pgPoolMax?: number | null;
  /**
   * Whether a query holds a connection until it returns, so the pool is a wall: true by default (JDBC's pools,
   * node-postgres, and the lab's server with its database gate on, PG_QUEUE_MAX or PG_ACQUIRE_TIMEOUT_MS); false
   * for the lab's server without the gate, where postgres.js pipelines queries onto busy connections and a
   * round trip's delay holds none.
   */
  poolHolds?: boolean;
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
  /** The server-side p99 of the mixture, or null with `p99Reason`. */
  p99Ms: number | null;
  /** Set when the p99 sits on a step of the distribution (stepAt): its figure is no answer to hold it to. */
  p99Step: string | null;
  /** The client's p99: the server's moved by the base's HTTP overhead (httpOverheadMs), or null without it. */
  clientP99Ms: number | null;
  p99Reason: string | null;
  /** Set when the target is outside what the model covers (a saturated pool): its figures are no answer. */
  outside: string | null;
  /** The pool cannot keep up at the target's rate: no wait is finite. */
  saturated: boolean;
  /** The pool's wait at the target, when a rate was given. */
  poolWait: Wait | null;
  /** How long a database load holds a pool connection at the target, ms (null: no db_load_ms_mean). */
  holdMs: number | null;
  /** The mixture the p99 is read from (empty without histograms), for a capacity that adds waits of its own. */
  components: Component[];
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

interface PoolQueue {
  holdMs: number | null;
  wait: Wait | null;
  /** The target's mean wait beyond the base cells' own (already in their means), ms. */
  extraMs: number;
  /** Whether the base cells waited enough that their distributions hold a wait of their own. */
  baseWaited: boolean;
  outside: string | null;
  saturated: boolean;
}

/** The database pool's queue at the target's rate, against the base cells' own at theirs. */
function poolQueue(costs: StrategyCosts, target: Target, dM: number, dbPerRequest: number): PoolQueue {
  const pool = target.pgPoolMax ?? costs.pgPoolMax;
  const rate = target.rateRps ?? null;
  const holdMs = costs.dbLoadMs === null ? null : costs.dbLoadMs + dM;
  const quiet = { holdMs, wait: null, extraMs: 0, baseWaited: false, outside: null, saturated: false };
  if (target.poolHolds === false) return quiet;
  if (rate === null || pool === null || holdMs === null || dbPerRequest === 0) return quiet;
  const wait = waitOf(pool, holdMs, rate * dbPerRequest);
  const rho = (rate * dbPerRequest * holdMs) / 1_000 / pool;
  const busy =
    rho > MAX_POOL_RHO
      ? `the database pool is ${(rho * 100).toFixed(0)}% busy (${fmtRate(rate * dbPerRequest)} loads/s × ${holdMs.toFixed(2)} ms over ${pool} connections): past ${MAX_POOL_RHO * 100}% the queue, not the tiers, sets the latency`
      : null;
  if (wait === null) {
    return {
      ...quiet,
      saturated: true,
      outside: `the database pool saturates (${fmtRate(rate * dbPerRequest)} loads/s × ${holdMs.toFixed(2)} ms is ${(rho * 100).toFixed(0)}% of ${pool} connections): requests queue without bound`,
    };
  }
  const share = costs.measuredShares;
  const baseDb = share === null ? null : share.miss + share.write;
  const base =
    costs.offeredRps === null || costs.dbLoadMs === null || baseDb === null
      ? null
      : waitOf(pool, costs.dbLoadMs, costs.offeredRps * baseDb);
  const baseMean = base?.meanMs ?? 0;
  return {
    holdMs,
    wait,
    extraMs: Math.max(0, wait.meanMs - baseMean),
    baseWaited: (base?.pWait ?? 0) > 0.05,
    outside: busy,
    saturated: false,
  };
}

function fmtRate(rps: number): string {
  return rps >= 100 ? rps.toFixed(0) : rps.toPrecision(3);
}

/** Points shifted by `ms`, each also spread over the pool's wait (a miss waits, then loads). */
function withWait(points: Points, wait: Wait | null): Points {
  return wait === null || wait.pWait <= 0 ? points : convolve(points, waitPoints(wait));
}

/** The mixture's p99: each term's outcome distribution shifted by what the target adds to it. */
function p99Of(
  costs: StrategyCosts,
  terms: Term[],
  dM: number,
  dR: number,
  queue: PoolQueue,
): { p99Ms: number | null; reason: string | null; components: Component[]; step: string | null } {
  const components: Component[] = [];
  for (const t of terms) {
    let points = costs.outcomeHists[t.outcome];
    let shift = dM * t.db + dR * t.redisOnPath;
    if (points === undefined && t.outcome === "write" && costs.outcomeHists.miss !== undefined) {
      // No writes timed in the base rows: the miss's distribution moved to the write's estimated mean.
      points = costs.outcomeHists.miss;
      shift += t.baseMs - (costs.outcomesMs.miss ?? t.baseMs);
    }
    if (points === undefined)
      return {
        p99Ms: null,
        components: [],
        step: null,
        reason: `no srv_${t.outcome}_hist in the base rows (recorded before the server's histograms reached the row): re-run the base`,
      };
    // The wait is spread over the distribution when the base cells did not already wait (else only its mean).
    const waited = t.db > 0 && queue.wait !== null;
    if (waited && !queue.baseWaited) points = withWait(points, queue.wait);
    else if (waited) shift += queue.extraMs;
    components.push({ points, share: t.share, shiftMs: shift });
  }
  const [p99 = null] = mixturePercentilesMs(components, [99]);
  return p99 === null
    ? { p99Ms: null, reason: "no timed requests in the base rows", components, step: null }
    : { p99Ms: p99, reason: null, components, step: stepAt(components, p99) };
}

/** How far either side of the p99 half a per cent of the requests reaches before it is no answer. */
export const P99_STEP_TOLERANCE = 0.35;

/**
 * Whether the p99 sits on a step of the distribution: a tail of about 1% of the requests far slower than
 * the rest (timers, a collection) puts the p99 at the step's top or bottom as its share lands a little above
 * or below 1%, which sampling alone moves by half a per cent. When p98.5 or p99.5 is more than
 * P99_STEP_TOLERANCE from the p99, no figure for it can be held to that tolerance: the step is said instead.
 */
function stepAt(components: Component[], p99: number): string | null {
  const [low, high] = mixturePercentilesMs(components, [98.5, 99.5]) as [number, number];
  if (high <= p99 * (1 + P99_STEP_TOLERANCE) && low >= p99 / (1 + P99_STEP_TOLERANCE)) return null;
  const ms = (v: number) => Number(v.toPrecision(3));
  return `the p99 falls on a step of the distribution (p98.5 ${ms(low)} ms, p99 ${ms(p99)}, p99.5 ${ms(high)}): half a per cent more or fewer slow requests moves it past ${P99_STEP_TOLERANCE * 100}%`;
}

/** The prediction for one strategy from its base costs, or why there is none. */
export function predictStrategy(costs: StrategyCosts, target: Target): StrategyPrediction | string {
  const { strategy } = costs;
  const shares = outcomeShares(strategy, target);
  if (typeof shares === "string") return shares;
  const dM = target.missCostMs - costs.addedMissMs;
  const dR = target.redisRttMs - costs.addedRedisRttMs;
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
  const queue = poolQueue(
    costs,
    target,
    dM,
    sum((t) => t.share * t.db),
  );
  if (queue.extraMs > 0) for (const t of terms) t.ms += t.share * t.db * queue.extraMs;
  const tail = p99Of(costs, terms, dM, dR, queue);
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
    p99Ms: tail.p99Ms,
    p99Step: tail.step,
    clientP99Ms:
      tail.p99Ms === null || costs.httpOverheadMs === null ? null : tail.p99Ms + costs.httpOverheadMs,
    p99Reason: tail.reason,
    outside: queue.outside,
    saturated: queue.saturated,
    poolWait: queue.wait,
    holdMs: queue.holdMs,
    components: tail.components,
    interceptMs,
    slopeMissMs,
    slopeRedisMs,
    terms,
    dbQueriesPerRequest: slopeMissMs,
    redisCmdsPerRequest: commands + listCommands,
    formula,
  };
}
