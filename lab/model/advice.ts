/**
 * The advice for numbers not run: every strategy predicted at the inputs (predict.ts), ranked by predicted
 * server-side mean, with its p99, its capacity at a p99 target (capacity.ts), database queries/s, Redis
 * commands per request, Redis memory and a staleness bound; the pick with its conditions; the predictions
 * swept over the Redis round trip and the miss cost with the crossovers between strategies (each mean is a
 * straight line in both).
 */
import { type Capacity, capacityOf } from "./capacity.ts";
import { predictStrategy, type StrategyPrediction, type Target } from "./predict.ts";
import { STRATEGIES, type Strategy } from "./round_trips.ts";
import { type StrategyCosts, withBorrowedL2 } from "./tier_costs.ts";

export { withBorrowedL2 };

export interface AdviseInputs {
  /** Added per database / Redis round trip beyond the base run's own paths, ms (the user's figure − the base). */
  missCostMs: number;
  redisRttMs: number;
  /** Reads answered without a load (redis, two_tier) and in process (local, two_tier's L1). */
  hitRatio: number;
  l1HitRatio: number;
  /**
   * tracking's own in-process share when known (its L1 takes a value only from an L2 hit, so it holds less
   * than two_tier's); absent or null: `l1HitRatio`, an upper bound for it.
   */
  trackingL1HitRatio?: number | null;
  /** Where the hit ratios come from, said in the output. */
  hitSource: string;
  rateRps: number;
  instances: number;
  writeRatio: number;
  stalenessBudgetMs: number | null;
  /** The entries Redis would hold (a trace's keys), or null for the base run's own figure. */
  redisEntries: number | null;
  /** Capacity's inputs: the pool, the cores, the p99 target; `checkRateRps`: a rate to check each against. */
  pgPoolMax: number;
  cores: number;
  /** The base run's peak cells' costs (`<attack>_peak`), where the CPU bound takes its figures; else absent. */
  peak?: StrategyCosts[];
  p99TargetMs: number;
  checkRateRps: number | null;
  /** The user's own figures as asked, for the check command (null: the base run's own). */
  askedMissCostMs: number | null;
  askedRedisRttMs: number | null;
}

/** A low–high range over the base run's repeats, each predicted alone. */
export type Interval = [low: number, high: number];

/** Whether a rate is under a strategy's capacity, and how many instances it needs. */
export interface RateCheck {
  rps: number;
  under: boolean;
  instances: number | null;
}

export interface StrategyAdvice {
  strategy: Strategy;
  predictedMeanMs: number;
  meanInterval: Interval | null;
  /** Null with p99Reason (base rows without histograms). */
  predictedP99Ms: number | null;
  /** Set when the p99 sits on a step of the distribution: its figure moves past 35% with half a per cent. */
  p99Step: string | null;
  /** The client's p99 where the base run measured HTTP's overhead (its client p50 less its server p50). */
  predictedClientP99Ms: number | null;
  p99Interval: Interval | null;
  p99Reason: string | null;
  /** Set when the rate is past what the model covers (a saturated pool): no figure is an answer then. */
  outside: string | null;
  capacity: Capacity;
  rateCheck: RateCheck | null;
  dbQps: number;
  redisCmdsPerRequest: number;
  /** Null when the bound is unknown (a TTL the rows lack). */
  stalenessBoundMs: number | null;
  staleness: string;
  redisMemoryBytes: number | null;
  redisMemory: string;
  /** Why the staleness budget rules it out, or null. */
  excluded: string | null;
  prediction: StrategyPrediction;
}

export type Axis = "redis_rtt_ms" | "miss_cost_ms";

export interface SweepPoint {
  xMs: number;
  strategy: Strategy;
  meanMs: number;
}

export interface Crossover {
  axis: Axis;
  /** Faster below `atMs` on this axis, and faster above it. */
  belowFaster: Strategy;
  aboveFaster: Strategy;
  atMs: number;
  meanMs: number;
}

export interface Advice {
  pick: Strategy | null;
  conditions: string[];
  ranked: StrategyAdvice[];
  /** Strategies without a prediction, each with its reason. */
  skipped: string[];
  sweeps: Record<Axis, SweepPoint[]>;
  /** The axis's range, 0 to this, ms. */
  sweepMaxMs: Record<Axis, number>;
  crossovers: Crossover[];
  notes: string[];
  checkCommand: string;
  /** The round trips the sweeps hold the other axis at. */
  inputsAt: { missCostMs: number; redisRttMs: number };
}

/** Sweep ranges: at least these, or twice the input's value. */
export const SWEEP_FLOOR_MS: Record<Axis, number> = { redis_rtt_ms: 2, miss_cost_ms: 20 };
const SWEEP_STEPS = 20;

function stalenessOf(costs: StrategyCosts, instances: number): { ms: number | null; text: string } {
  const several = instances > 1;
  switch (costs.strategy) {
    case "none":
      return { ms: 0, text: "0: every read is the database's" };
    case "redis":
      return { ms: 0, text: "0 once delete() has returned (while a delete is pending: up to the Redis TTL)" };
    case "local":
      if (!several) return { ms: 0, text: "0 with one instance (its own delete drops the copy)" };
      return {
        ms: costs.cacheTtlMs,
        text: `each instance's copy until its TTL (cache_ttl_ms ${costs.cacheTtlMs ?? "unknown"})`,
      };
    case "two_tier":
      if (!several) return { ms: 0, text: "0 with one instance" };
      return {
        ms: costs.l1TtlMs,
        text: `the bus delay; l1_ttl_ms (${costs.l1TtlMs ?? "unknown"}) when an invalidation message is lost`,
      };
    case "tracking":
      if (!several) return { ms: 0, text: "0 with one instance" };
      // Its L1 can outlive an invalidation while Redis hangs (scale_out measured stale reads): up to its TTL.
      return {
        ms: costs.l1TtlMs,
        text: `the push's delay; while Redis hangs or past an expiry in Redis, up to l1_ttl_ms (${costs.l1TtlMs ?? "unknown"})`,
      };
  }
}

function memoryOf(costs: StrategyCosts, entries: number | null): { bytes: number | null; text: string } {
  if (costs.strategy === "none" || costs.strategy === "local") return { bytes: null, text: "no Redis" };
  const per = costs.redisBytesPerEntry;
  if (per === null) return { bytes: null, text: "unknown: no redis_bytes_per_entry in the base rows" };
  if (entries !== null)
    return {
      bytes: per * entries,
      text: `${Math.round(per)} B/entry (base run) × ${entries} entries (the trace's keys)`,
    };
  if (costs.redisEntries === null) return { bytes: null, text: "unknown: no redis_entries in the base rows" };
  return {
    bytes: per * costs.redisEntries,
    text: `the base run's ${Math.round(costs.redisEntries)} entries × ${Math.round(per)} B (its workload, not yours)`,
  };
}

function lineAt(p: StrategyPrediction, axis: Axis, x: number, inputs: AdviseInputs): number {
  const m = axis === "miss_cost_ms" ? x : inputs.missCostMs;
  const r = axis === "redis_rtt_ms" ? x : inputs.redisRttMs;
  return p.interceptMs + p.slopeMissMs * m + p.slopeRedisMs * r;
}

/** Where two strategies' lines cross on `axis` within [0, maxMs], the other input held. */
export function crossovers(
  predictions: StrategyPrediction[],
  axis: Axis,
  maxMs: number,
  inputs: AdviseInputs,
): Crossover[] {
  const slope = (p: StrategyPrediction) => (axis === "miss_cost_ms" ? p.slopeMissMs : p.slopeRedisMs);
  const found: Crossover[] = [];
  predictions.forEach((a, i) => {
    for (const b of predictions.slice(i + 1)) {
      const ds = slope(a) - slope(b);
      if (Math.abs(ds) < 1e-12) continue;
      const at = (lineAt(b, axis, 0, inputs) - lineAt(a, axis, 0, inputs)) / ds;
      if (!(at >= 0 && at <= maxMs)) continue;
      // The one with the smaller slope is faster above the crossing.
      const [aboveFaster, belowFaster] = ds > 0 ? [b, a] : [a, b];
      found.push({
        axis,
        belowFaster: belowFaster.strategy,
        aboveFaster: aboveFaster.strategy,
        atMs: at,
        meanMs: lineAt(a, axis, at, inputs),
      });
    }
  });
  return found.sort((x, y) => x.atMs - y.atMs);
}

function fmt(ms: number): string {
  return String(Number(ms.toFixed(3)));
}

function intervalOf(values: (number | null)[]): Interval | null {
  const known = values.filter((v): v is number => v !== null);
  if (known.length < 2 || known.length < values.length) return null;
  return [Math.min(...known), Math.max(...known)];
}

/** The advice at `inputs` from base-run tier costs. */
export function advise(allCosts: StrategyCosts[], inputs: AdviseInputs): Advice {
  const target: Target = {
    missCostMs: inputs.missCostMs,
    redisRttMs: inputs.redisRttMs,
    hitRatio: inputs.hitRatio,
    l1HitRatio: inputs.l1HitRatio,
    writeRatio: inputs.writeRatio,
    listShare: 0,
    // The pool queues at your rate; without one, the mean and p99 are at light load (capacity says where it ends).
    rateRps: inputs.checkRateRps,
    pgPoolMax: inputs.pgPoolMax,
  };
  const skipped: string[] = [];
  const borrowed: string[] = [];
  const rows: StrategyAdvice[] = [];
  for (const name of STRATEGIES) {
    const found = allCosts.find((c) => c.strategy === name);
    if (found === undefined) {
      skipped.push(`${name}: not in the base run`);
      continue;
    }
    const { costs, note } = withBorrowedL2(found, allCosts);
    if (note !== null) borrowed.push(note);
    const own = name === "tracking" ? inputs.trackingL1HitRatio : null;
    const wanted = own == null ? target : { ...target, l1HitRatio: own };
    const prediction = predictStrategy(costs, wanted);
    if (typeof prediction === "string") {
      skipped.push(prediction);
      continue;
    }
    const repeats = costs.perRepeat.map((c) => predictStrategy(c, wanted));
    const capacity = capacityOf(costs, allCosts, {
      target: wanted,
      cores: inputs.cores,
      pgPoolMax: inputs.pgPoolMax,
      p99TargetMs: inputs.p99TargetMs,
      ...(inputs.peak === undefined ? {} : { peak: inputs.peak }),
    });
    const check = inputs.checkRateRps;
    const rateCheck: RateCheck | null =
      check === null
        ? null
        : {
            rps: check,
            under: capacity.rps !== null && check <= capacity.rps,
            instances: capacity.rps === null || capacity.rps <= 0 ? null : Math.ceil(check / capacity.rps),
          };
    const staleness = stalenessOf(costs, inputs.instances);
    const memory = memoryOf(costs, inputs.redisEntries);
    const budget = inputs.stalenessBudgetMs;
    const over = budget !== null && (staleness.ms === null || staleness.ms > budget);
    rows.push({
      strategy: name,
      predictedMeanMs: prediction.meanMs,
      meanInterval: intervalOf(repeats.map((p) => (typeof p === "string" ? null : p.meanMs))),
      predictedP99Ms: prediction.p99Ms,
      p99Step: prediction.p99Step,
      predictedClientP99Ms: prediction.clientP99Ms,
      p99Interval: intervalOf(repeats.map((p) => (typeof p === "string" ? null : p.p99Ms))),
      p99Reason: prediction.p99Reason,
      outside: prediction.outside,
      capacity,
      rateCheck,
      dbQps: inputs.rateRps * prediction.dbQueriesPerRequest,
      redisCmdsPerRequest: prediction.redisCmdsPerRequest,
      stalenessBoundMs: staleness.ms,
      staleness: staleness.text,
      redisMemoryBytes: memory.bytes,
      redisMemory: memory.text,
      excluded: over
        ? `staleness bound ${staleness.ms === null ? "unknown" : `${staleness.ms} ms`} over the budget ${budget} ms with ${inputs.instances} instance${inputs.instances === 1 ? "" : "s"}: ${staleness.text}`
        : null,
      prediction,
    });
  }
  const ranked = [...rows].sort((a, b) => a.predictedMeanMs - b.predictedMeanMs);
  const eligible = ranked.filter((r) => r.excluded === null);
  const pick = eligible[0] ?? null;
  const conditions: string[] = [];
  for (const r of ranked) if (r.excluded !== null) conditions.push(`${r.strategy} excluded: ${r.excluded}`);
  if (pick !== null) {
    const next = eligible[1];
    if (next) {
      const more = (next.predictedMeanMs / pick.predictedMeanMs - 1) * 100;
      conditions.push(`next: ${next.strategy}, predicted ${more.toFixed(0)}% slower`);
    }
    if (pick.strategy === "local" && inputs.stalenessBudgetMs === null) {
      const shared =
        eligible.find((r) => r.strategy === "two_tier" || r.strategy === "tracking") ??
        eligible.find((r) => r.strategy === "redis");
      if (shared) {
        conditions.push(
          inputs.instances === 1
            ? `${shared.strategy} if you run more than one instance and need staleness under local's TTL (each instance's copy is stale until it expires); otherwise local`
            : `with ${inputs.instances} instances each local copy is stale until its TTL (${pick.staleness}): ${shared.strategy} if you need less (give --staleness-budget-ms)`,
        );
      }
    }
    if (pick.rateCheck !== null && !pick.rateCheck.under) {
      const holds = eligible.find((r) => r.rateCheck?.under === true);
      conditions.push(
        holds
          ? `${pick.strategy} does not hold ${inputs.p99TargetMs} ms p99 at ${pick.rateCheck.rps} rps on one instance (capacity ${Math.round(pick.capacity.rps ?? 0)} rps); ${holds.strategy} does (${Math.round(holds.capacity.rps ?? 0)} rps)`
          : `no strategy holds ${inputs.p99TargetMs} ms p99 at ${pick.rateCheck.rps} rps on one instance: see the instances each needs`,
      );
    }
    const spare = eligible
      .filter((r) => r.dbQps <= 0.5 * pick.dbQps && r !== pick)
      .sort((a, b) => a.dbQps - b.dbQps)[0];
    if (spare) {
      conditions.push(
        `${spare.strategy} if the database is the constraint (${Math.round(spare.dbQps)} vs ${Math.round(pick.dbQps)} queries/s); otherwise ${pick.strategy}`,
      );
    }
  }
  const predictions = rows.map((r) => r.prediction);
  const sweepMaxMs: Record<Axis, number> = {
    redis_rtt_ms: Math.max(SWEEP_FLOOR_MS.redis_rtt_ms, 2 * inputs.redisRttMs),
    miss_cost_ms: Math.max(SWEEP_FLOOR_MS.miss_cost_ms, 2 * inputs.missCostMs),
  };
  const sweep = (axis: Axis): SweepPoint[] =>
    Array.from({ length: SWEEP_STEPS + 1 }, (_, i) => (sweepMaxMs[axis] * i) / SWEEP_STEPS).flatMap((x) =>
      predictions.map((p) => ({ xMs: x, strategy: p.strategy, meanMs: lineAt(p, axis, x, inputs) })),
    );
  const estimated = rows.flatMap((r) =>
    r.prediction.terms
      .filter((t) => t.estimated !== null)
      .map((t) => `${r.strategy} ${t.outcome}: ${t.estimated}`),
  );
  return {
    pick: pick?.strategy ?? null,
    conditions,
    ranked,
    skipped,
    sweeps: { redis_rtt_ms: sweep("redis_rtt_ms"), miss_cost_ms: sweep("miss_cost_ms") },
    sweepMaxMs,
    crossovers: [
      ...crossovers(predictions, "redis_rtt_ms", sweepMaxMs.redis_rtt_ms, inputs),
      ...crossovers(predictions, "miss_cost_ms", sweepMaxMs.miss_cost_ms, inputs),
    ],
    notes: [
      `hit ratios: ${inputs.hitSource}`,
      "server-side: from the handler's start to its response, without the network to the client; the p99 is the mixture of each outcome's measured distribution, each moved by what it adds, and the database pool's wait at the rate (Erlang C)",
      `capacity: the highest rate at which the predicted p99 stays under ${inputs.p99TargetMs} ms, the least of the CPU (${inputs.cores} cores for the server, Postgres and Redis; the server's event loop on one), the pool (${inputs.pgPoolMax} connections) and Redis's one thread, each an M/M/c queue`,
      ...borrowed,
      "database queries/s: rate × (reads that miss + writes); one query per miss and per write",
      ...estimated,
    ],
    inputsAt: { missCostMs: inputs.missCostMs, redisRttMs: inputs.redisRttMs },
    checkCommand: [
      "bun run experiment quickstart",
      inputs.askedMissCostMs === null ? "" : ` --miss-cost-ms ${fmt(inputs.askedMissCostMs)}`,
      inputs.askedRedisRttMs === null ? "" : ` --redis-rtt-ms ${fmt(inputs.askedRedisRttMs)}`,
    ].join(""),
  };
}
