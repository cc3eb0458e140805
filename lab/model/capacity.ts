/**
 * The highest request rate at which a strategy holds a p99 target, as the least of three bounds, each from
 * the base cells' own measurements (docs/advise.md "Capacity"):
 * - cpu: the CPU a request costs the server, Postgres and Redis by outcome, against the cores (and the
 *   server's one event loop against one core), taken at the peak cells where the base run has them (a
 *   request costs 3-6× less CPU at saturation than at 1 000 rps: batching); the load tool's is not counted;
 * - pool: the database pool (Little's law: connections ÷ the time a load holds one ÷ the loads per request);
 * - redis: Redis's one thread, its CPU per command × the commands per request.
 * Each bound is the rate where its queue (M/M/c, lab/model/queueing.ts) pushes the predicted p99 past the
 * target; the answer is the least, with the bound that binds.
 */
import { type Component, convolve, mixturePercentileMs } from "./histogram.ts";
import { predictStrategy, type StrategyPrediction, type Target } from "./predict.ts";
import { waitOf, waitPoints } from "./queueing.ts";
import { OUTCOMES, type Outcome, ROUND_TRIPS, type Strategy } from "./round_trips.ts";
import type { StrategyCosts } from "./tier_costs.ts";

export const DEFAULT_P99_TARGET_MS = 100;

export type Bound = "cpu" | "event_loop" | "pool" | "redis";

export interface Capacity {
  /** The highest rate holding the target, or null with `reason`. */
  rps: number | null;
  bound: Bound | null;
  /** Each bound's own highest rate (null: not known from the rows, or not this strategy's). */
  bounds: Record<Bound, number | null>;
  /** CPU seconds a request costs at the target's shares: server, Postgres, Redis (the load tool's apart). */
  cpuPerRequestS: { server: number; postgres: number; redis: number; loadgen: number | null } | null;
  reason: string | null;
  notes: string[];
}

export interface CapacityInputs {
  target: Target;
  /** Cores the server, Postgres and Redis share (default: the base run's CPU limit, else its machine's). */
  cores: number;
  pgPoolMax: number;
  p99TargetMs: number;
  /**
   * The load tool shares the cores (the lab's own runs: capacity_check): its CPU per request counts in the
   * `cpu` bound. Default false: a user's load comes from elsewhere.
   */
  loadgenShares?: boolean;
  /**
   * Every strategy's costs in peak cells: the base's workload and settings driven closed-loop until the
   * cores are saturated. The CPU bound takes its CPU per request there, and with `loadgenShares` the cores
   * the server, Postgres and Redis got beside the load tool. Without: the base cells', a floor.
   */
  peak?: StrategyCosts[];
}

/** A peak cell counts when the processes it measured (the load tool's included) took this share of the cores. */
export const PEAK_SATURATION = 0.85;

/** CPU seconds per request of each outcome, from none (a miss), local (an in-process hit) and `own`. */
interface OutcomeCpu {
  perOutcome: Record<Outcome, { server: number; postgres: number; redis: number }>;
  notes: string[];
}

const total = (c: { server: number; postgres: number; redis: number }) => c.server + c.postgres + c.redis;

/**
 * CPU by outcome: a miss costs what none's request costs; an in-process hit what is left of local's once its
 * misses are paid; a strategy's Redis commands what is left of its own once its hits and misses are paid at
 * those, spread over the commands its outcomes send (ROUND_TRIPS). The measured outcome shares are used.
 */
export function outcomeCpu(costs: StrategyCosts, all: StrategyCosts[]): OutcomeCpu | string {
  const none = all.find((c) => c.strategy === "none");
  const local = all.find((c) => c.strategy === "local");
  if (none?.cpuPerRequest == null) return "no CPU figures for none in the base run (a miss's CPU)";
  const miss = { server: none.cpuPerRequest.server, postgres: none.cpuPerRequest.postgres, redis: 0 };
  const notes: string[] = [];
  let hit = { server: miss.server * 0.2, postgres: 0, redis: 0 };
  const localShares = local?.measuredShares;
  if (local?.cpuPerRequest != null && localShares != null && localShares.l1_hit > 0) {
    const server = (local.cpuPerRequest.server - (1 - localShares.l1_hit) * miss.server) / localShares.l1_hit;
    hit = { server: Math.max(server, 0), postgres: 0, redis: 0 };
  } else notes.push("no CPU figures for local: an in-process hit taken as a fifth of a miss's server CPU");
  const base: Record<Outcome, { server: number; postgres: number; redis: number }> = {
    l1_hit: hit,
    l2_hit: hit,
    miss,
    write: miss,
  };
  const trips = ROUND_TRIPS[costs.strategy];
  const shares = costs.measuredShares;
  const commands =
    shares === null ? 0 : OUTCOMES.reduce((n, o) => n + shares[o] * (trips[o]?.redisCommands ?? 0), 0);
  if (commands === 0 || costs.cpuPerRequest === null || shares === null) return { perOutcome: base, notes };
  // What the strategy's own cells cost beyond hits and misses, per Redis command: the client's and Redis's.
  const paid = (key: "server" | "redis") => OUTCOMES.reduce((n, o) => n + shares[o] * base[o][key], 0);
  const perCommand = {
    server: Math.max(0, (costs.cpuPerRequest.server - paid("server")) / commands),
    redis: Math.max(0, costs.cpuPerRequest.redis / commands),
  };
  const perOutcome = Object.fromEntries(
    OUTCOMES.map((o) => {
      const n = trips[o]?.redisCommands ?? 0;
      const b = base[o];
      return [
        o,
        { server: b.server + n * perCommand.server, postgres: b.postgres, redis: n * perCommand.redis },
      ];
    }),
  ) as OutcomeCpu["perOutcome"];
  return { perOutcome, notes };
}

/**
 * Where the CPU bound's figures come from: the peak cells when they saturated the cores, else the base's
 * (said in a note). `available`: the cores the server, Postgres and Redis get; `loadgenApart`: whether the
 * load tool's share is already out of it (the peak's cores were measured beside it).
 */
function cpuSource(
  costs: StrategyCosts,
  all: StrategyCosts[],
  inputs: CapacityInputs,
  notes: string[],
): { cpu: OutcomeCpu | string; cores: { available: number; loadgenApart: boolean } } {
  const base = { cpu: outcomeCpu(costs, all), cores: { available: inputs.cores, loadgenApart: false } };
  const rate = costs.offeredRps === null ? "its rate" : `${Math.round(costs.offeredRps)} rps`;
  const floor = `CPU per request from the base cells at ${rate}: a request costs less at higher rates (batching), so the cpu bound is a floor`;
  // Without CPU figures at the base there is no bound at all (capacityOf says so): no floor to speak of.
  const fallback = (why: string) => {
    if (typeof base.cpu !== "string") notes.push(why);
    return base;
  };
  if (inputs.peak === undefined) return fallback(floor);
  const peakOf = inputs.peak.find((c) => c.strategy === costs.strategy);
  const own = peakOf?.cpuPerRequest;
  if (peakOf === undefined || own?.coresUsed == null)
    return fallback(`no peak cell of ${costs.strategy} with CPU figures: ${floor}`);
  // Saturated on the machine the peak ran on (its CPU limit, else its cores), whatever `--cores` asks.
  const had = peakOf.cpuLimit ?? peakOf.cpuCount ?? inputs.cores;
  const took = own.coresUsed + (own.loadgenCoresUsed ?? 0);
  if (took < PEAK_SATURATION * had)
    return fallback(`the peak cells took ${took.toFixed(2)} of ${had} cores (not saturated): ${floor}`);
  const rps = peakOf.achievedRps == null ? "" : ` (${Math.round(peakOf.achievedRps)} rps)`;
  notes.push(`CPU per request from the peak cells${rps}, where the cores were saturated`);
  const available = inputs.loadgenShares === true ? own.coresUsed : inputs.cores;
  return { cpu: outcomeCpu(peakOf, inputs.peak), cores: { available, loadgenApart: true } };
}

/** The p99 of a prediction's mixture with further waits (the CPU's, Redis's) spread over every request. */
function p99With(components: Component[], waits: [number, number][][]): number | null {
  if (components.length === 0) return null;
  let spread = components;
  for (const wait of waits) {
    if (wait.length <= 1) continue;
    spread = spread.map((c) => ({ ...c, points: convolve(c.points, wait) }));
  }
  return mixturePercentileMs(spread, 99);
}

/** The capacity of one strategy at `inputs`, from its base costs and the others' (for CPU by outcome). */
export function capacityOf(costs: StrategyCosts, all: StrategyCosts[], inputs: CapacityInputs): Capacity {
  const strategy: Strategy = costs.strategy;
  const bounds: Record<Bound, number | null> = { cpu: null, event_loop: null, pool: null, redis: null };
  const notes: string[] = [];
  const at = (rps: number): StrategyPrediction | null => {
    const p = predictStrategy(costs, { ...inputs.target, rateRps: rps, pgPoolMax: inputs.pgPoolMax });
    return typeof p === "string" ? null : p;
  };
  const light = at(1e-6);
  const fail = (reason: string): Capacity => ({
    rps: null,
    bound: null,
    bounds,
    cpuPerRequestS: null,
    reason,
    notes,
  });
  if (light === null) return fail(`${strategy}: no prediction`);
  if (light.p99Ms === null) return fail(`no p99: ${light.p99Reason}`);
  const shares = light.terms.map((t) => [t.outcome, t.share] as const);
  const { cpu, cores } = cpuSource(costs, all, inputs, notes);
  let perRequest: Capacity["cpuPerRequestS"] = null;
  if (typeof cpu === "string") notes.push(`no CPU bound: ${cpu}`);
  else {
    notes.push(...cpu.notes);
    const sum = (key: "server" | "postgres" | "redis") =>
      shares.reduce((n, [o, share]) => n + share * cpu.perOutcome[o][key], 0);
    const loadgen = costs.cpuPerRequest?.loadgen ?? null;
    perRequest = { server: sum("server"), postgres: sum("postgres"), redis: sum("redis"), loadgen };
  }
  const commands = light.redisCmdsPerRequest;
  const dbPerRequest = light.dbQueriesPerRequest;

  // Each bound's own rate: its queue alone on top of the light-load mixture (the pool's wait is the model's
  // own, predictStrategy's at that rate); the answer is the least of them.
  const search = (most: number, ok: (rps: number) => boolean) => {
    if (!ok(Math.min(1, most * 1e-3))) return 0;
    let low = 0;
    let high = most;
    for (let i = 0; i < 60 && high - low > most * 2e-3; i++) {
      const mid = (low + high) / 2;
      if (ok(mid)) low = mid;
      else high = mid;
    }
    return low;
  };
  const under = (p99: number | null) => p99 !== null && p99 <= inputs.p99TargetMs;
  /** A queue of `servers` each held `holdMs` per arrival, `perRequest` arrivals a request, over the light load. */
  const queued = (servers: number, holdMs: number, perRequest: number) => (rps: number) => {
    const wait = waitOf(servers, holdMs, rps * perRequest);
    return wait !== null && under(p99With(light.components, [waitPoints(wait)]));
  };
  if (inputs.target.poolHolds === false)
    notes.push("the pool is no wall here: queries pipeline onto busy connections (no database gate)");
  else if (dbPerRequest > 0 && light.holdMs !== null) {
    const most = (inputs.pgPoolMax * 1_000) / light.holdMs / dbPerRequest;
    bounds.pool = search(most, (rps) => {
      const p = at(rps);
      return p !== null && !p.saturated && under(p.p99Ms);
    });
  }
  if (perRequest !== null) {
    // At the peak the load tool's share is already out of `cores`; at the base its CPU per request is added.
    const sharesHere = inputs.loadgenShares === true && cores.loadgenApart === false;
    const shared = sharesHere ? (perRequest.loadgen ?? 0) : 0;
    if (sharesHere && perRequest.loadgen === null)
      notes.push("the load tool shares the cores, but the base rows have no loadgen_cpu_s: not counted");
    const machineMs = (total(perRequest) + shared) * 1_000;
    // `cores.available` cores as inputs.cores servers, each slower in proportion.
    const holdMs = (machineMs * inputs.cores) / cores.available;
    if (machineMs > 0)
      bounds.cpu = search(cores.available / (machineMs / 1_000), queued(inputs.cores, holdMs, 1));
    const loopMs = perRequest.server * 1_000;
    if (loopMs > 0) bounds.event_loop = search(1_000 / loopMs, queued(1, loopMs, 1));
    const commandMs = commands > 0 ? (perRequest.redis * 1_000) / commands : 0;
    if (commandMs > 0) bounds.redis = search(1_000 / (commandMs * commands), queued(1, commandMs, commands));
  }
  const known = (Object.entries(bounds) as [Bound, number | null][]).filter(
    (entry): entry is [Bound, number] => entry[1] !== null,
  );
  if (known.length === 0)
    return { ...fail("no bound could be computed from the base rows"), cpuPerRequestS: perRequest };
  const [bound, rps] = known.reduce((a, b) => (b[1] < a[1] ? b : a));
  if (perRequest?.loadgen != null && inputs.loadgenShares !== true)
    notes.push(
      "the load tool's own CPU (loadgen_cpu_s in the base rows) is not counted: on a machine it shares, capacity is lower",
    );
  return { rps, bound, bounds, cpuPerRequestS: perRequest, reason: null, notes };
}
