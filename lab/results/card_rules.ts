/**
 * The decision card's rules: pure functions from a workload's per-strategy figures to verdicts (which is
 * lower beyond noise, what a strategy buys and costs against `none`, which to pick under which condition).
 * Each rule's method and formula is in docs/card.md; each has a test in card_rules_test.ts where it flips.
 */
import { intervalsOverlap, median, medianInterval } from "./intervals.ts";

/** One strategy in one workload: per-repeat latency samples, medians across repeats for the rest. */
export interface Figures {
  strategy: string;
  repeats: number;
  p50Ms: number[];
  p99Ms: number[];
  /** Achieved rps per repeat: what decides in the closed model. */
  rps: number[];
  meanMs: number | null;
  hitRatio: number | null;
  hitRatioExpected: number | null;
  hitRatioOptimal: number | null;
  l1HitRatio: number | null;
  l2HitRatio: number | null;
  dbQueriesPerS: number | null;
  errorRatio: number | null;
  shed: number | null;
  /** Of `shed`, those shed because the event loop was behind (shed_event_loop), or null from older rows. */
  shedEventLoop?: number | null;
  cpuMsPer1kRequests: number | null;
  /** Postgres's and Redis's CPU per 1 000 requests (postgres_cpu_s + redis_cpu_s), or null. */
  servicesCpuMsPer1kRequests?: number | null;
  rssPeakMb: number | null;
  /** The entries the lab's Redis held after the run and Redis's own bytes per entry (redis, two_tier, tracking). */
  redisEntries: number | null;
  redisBytesPerEntry: number | null;
  stalenessP99Ms: number | null;
  /** What a database load cost the server (db_load_ms_p50): the miss cost, measured. */
  missCostMs: number | null;
}

/** What the run was: the staleness rules need to know whether instances could disagree. */
export interface RunContext {
  /** The closed model (fixed connections): throughput decides, and every latency includes the queue. */
  closed: boolean;
  instances: number | null;
  writes: boolean;
  cacheTtlMs: number | null;
}

/** Above this error ratio (or with any shed request) a strategy is not recommended: it failed the load. */
export const MAX_ERROR_RATIO = 0.01;
/** Memory and CPU differences smaller than this share of none's are not worth a line. */
export const MATERIAL_SHARE = 0.1;

export type Order = "lower" | "higher" | "~" | "no confidence";

/**
 * a against b on per-repeat samples: lower/higher when their order-statistic intervals of the median are
 * disjoint, "~" when they overlap, "no confidence" when either has fewer than 3 repeats.
 */
export function compareSamples(a: number[], b: number[]): Order {
  const ia = medianInterval(a);
  const ib = medianInterval(b);
  if (ia === null || ib === null) return "no confidence";
  if (intervalsOverlap(ia, ib)) return "~";
  return ia.median < ib.median ? "lower" : "higher";
}

const SYMBOL: Record<Order, string> = { lower: "<", higher: ">", "~": "~", "no confidence": "?" };

/**
 * The figure a workload is decided on: p99 under a fixed arrival rate; throughput at a fixed number of
 * connections, where a faster strategy answers more requests and so queues more of them (its p99 can rise).
 */
export function decisive(closed: boolean): { name: string; samples: (f: Figures) => number[] } {
  return closed ? { name: "throughput", samples: (f) => f.rps } : { name: "p99", samples: (f) => f.p99Ms };
}

/**
 * Strategies best first, each with how it stands against the next: by median p99 then p50 (`<`, `~`, `?`),
 * or in the closed model by median throughput then p99 (`>`, `~`, `?`).
 */
export function rank(figures: Figures[], closed = false): { figures: Figures; next: string | null }[] {
  const key = (f: Figures): [number, number] =>
    closed
      ? [-(median(f.rps) ?? Number.NEGATIVE_INFINITY), median(f.p99Ms) ?? Number.POSITIVE_INFINITY]
      : [median(f.p99Ms) ?? Number.POSITIVE_INFINITY, median(f.p50Ms) ?? Number.POSITIVE_INFINITY];
  const sorted = [...figures].sort((a, b) => {
    const [a1, a2] = key(a);
    const [b1, b2] = key(b);
    return a1 === b1 ? a2 - b2 : a1 - b1;
  });
  const { samples } = decisive(closed);
  return sorted.map((f, i) => {
    const next = sorted[i + 1];
    return {
      figures: f,
      next: next === undefined ? null : SYMBOL[compareSamples(samples(f), samples(next))],
    };
  });
}

/** A change as a signed percentage, "−44%"; null when either side is missing or the base is 0. */
export function percentChange(value: number | null, base: number | null): string | null {
  if (value === null || base === null || base === 0) return null;
  const change = Math.round((value / base - 1) * 100);
  return change < 0 ? `−${-change}%` : `+${change}%`;
}

function latencyPart(name: string, mine: number[], base: number[]): string | null {
  const change = percentChange(median(mine), median(base));
  if (change === null) return null;
  const order = compareSamples(mine, base);
  return order === "~" ? `${name} ~ (${change}, within the repeats' noise)` : `${name} ${change}`;
}

export function failed(f: Figures): boolean {
  return (f.errorRatio !== null && f.errorRatio > MAX_ERROR_RATIO) || (f.shed !== null && f.shed > 0);
}

/**
 * What a strategy buys and costs here against `base` (none): p50, p99 and DB always; CPU and memory when
 * they differ by ≥ 10%; Redis's memory where Redis holds entries; staleness when the run had writes and several instances; errors and shed when any.
 */
export function tradeLine(f: Figures, base: Figures | null, context: RunContext): string {
  if (base === null) return `${f.strategy}: no \`none\` rows to compare with`;
  if (f.strategy === base.strategy) return `${f.strategy}: the baseline (every read is a database query)`;
  const parts = [
    latencyPart("p50", f.p50Ms, base.p50Ms),
    latencyPart("p99", f.p99Ms, base.p99Ms),
    ((change) => (change === null ? "DB q/s not measured" : `DB ${change}`))(
      percentChange(f.dbQueriesPerS, base.dbQueriesPerS),
    ),
  ];
  const material = (mine: number | null, theirs: number | null): boolean =>
    mine !== null && theirs !== null && theirs > 0 && Math.abs(mine / theirs - 1) >= MATERIAL_SHARE;
  if (material(f.cpuMsPer1kRequests, base.cpuMsPer1kRequests)) {
    parts.push(`CPU/1k req ${percentChange(f.cpuMsPer1kRequests, base.cpuMsPer1kRequests)}`);
  }
  const services = f.servicesCpuMsPer1kRequests ?? null;
  const baseServices = base.servicesCpuMsPer1kRequests ?? null;
  if (material(services, baseServices)) {
    parts.push(`Postgres + Redis CPU/1k req ${percentChange(services, baseServices)}`);
  }
  if (material(f.rssPeakMb, base.rssPeakMb) && (f.rssPeakMb as number) > (base.rssPeakMb as number)) {
    parts.push(`memory +${Math.round((f.rssPeakMb as number) - (base.rssPeakMb as number))} MB RSS`);
  }
  if (f.redisEntries !== null && f.redisBytesPerEntry !== null && f.redisEntries > 0) {
    const mb = (f.redisEntries * f.redisBytesPerEntry) / 1_048_576;
    parts.push(
      `Redis ${mb.toFixed(1)} MB for ${Math.round(f.redisEntries).toLocaleString("en-US")} entries (${Math.round(f.redisBytesPerEntry)} B each)`,
    );
  }
  if (context.writes && (context.instances ?? 1) > 1 && f.stalenessP99Ms !== null) {
    parts.push(`with ${context.instances} instances stale for p99 ${f.stalenessP99Ms} ms after a write`);
  }
  if (f.errorRatio !== null && f.errorRatio > 0) parts.push(`errors ${(f.errorRatio * 100).toFixed(2)}%`);
  if (f.shed !== null && f.shed > 0)
    parts.push(`shed ${f.shed}${f.shedEventLoop ? ` (${f.shedEventLoop} on event-loop delay)` : ""}`);
  return `${f.strategy}: ${parts.filter((part) => part !== null).join(", ")}`;
}

export interface Recommendation {
  /**
   * The strategy to choose, or null: none without errors, or the best as measured has fewer than 3 repeats
   * (`noConfidence` says so, and the ranking is then all the card shows).
   */
  pick: string | null;
  /** Strategies not distinguishable from the pick on the decisive figure (their intervals overlap). */
  tied: string[];
  /** "X if …; otherwise pick" lines, derived from staleness and DB load. */
  conditions: string[];
  /** Why the pick (or its comparison with some strategy) carries no confidence, or null when it does. */
  noConfidence: string | null;
  excluded: string[];
}

/**
 * Where a shared tier keeps instances consistent: the strategies a per-instance cache's users move to. The
 * in-process ones first (two_tier's L1 told by pub/sub, tracking's by Redis's pushes), the better ranked of
 * them; redis only without either.
 */
const COHERENT_IN_PROCESS = ["two_tier", "tracking"];

/**
 * The pick: best on the decisive figure (lowest p99; closed model: highest throughput) among strategies that
 * did not fail the load, if it has at least 3 repeats (else no pick, only `noConfidence`); ties by overlapping intervals;
 * conditions when a close-enough alternative is fresher (several instances) or spares the database.
 */
export function recommend(figures: Figures[], context: RunContext): Recommendation {
  const excluded = figures.filter(failed).map((f) => f.strategy);
  const { samples } = decisive(context.closed);
  const eligible = rank(
    figures.filter((f) => !failed(f) && samples(f).length > 0),
    context.closed,
  ).map((r) => r.figures);
  const pick = eligible[0];
  if (pick === undefined) return { pick: null, tied: [], conditions: [], noConfidence: null, excluded };
  const tied = eligible.slice(1).filter((f) => compareSamples(samples(f), samples(pick)) === "~");
  const few = (n: number): string => `${n} repeat${n === 1 ? "" : "s"}`;
  // Without an interval a first place is one draw of the noise: it is ranked, never picked.
  if (pick.repeats < 3) {
    return {
      pick: null,
      tied: [],
      conditions: [],
      noConfidence: `no confidence: ${few(pick.repeats)}`,
      excluded,
    };
  }
  const thin = eligible.filter((f) => f.repeats < 3 && f !== pick);
  const noConfidence =
    thin.length > 0
      ? `not compared with confidence: ${thin.map((f) => `${f.strategy} (${few(f.repeats)} valid)`).join(", ")}`
      : null;
  const conditions: string[] = [];
  const several = (context.instances ?? 1) > 1;
  if (several && context.writes && pick.stalenessP99Ms !== null) {
    // A cache that keeps instances fresher; none is never stale, but it is no cache to choose instead.
    const fresher = eligible.find(
      (f) =>
        f.strategy !== "none" &&
        f.stalenessP99Ms !== null &&
        f.stalenessP99Ms < (pick.stalenessP99Ms as number),
    );
    if (fresher) {
      conditions.push(
        `${fresher.strategy} if you need staleness under ${pick.stalenessP99Ms} ms (its p99 ${fresher.stalenessP99Ms} ms); otherwise ${pick.strategy}`,
      );
    }
  } else if (!several && pick.strategy === "local") {
    const shared =
      eligible.find((f) => COHERENT_IN_PROCESS.includes(f.strategy)) ??
      eligible.find((f) => f.strategy === "redis");
    if (shared) {
      const ttl = context.cacheTtlMs === null ? "its TTL" : `its TTL, ${context.cacheTtlMs} ms`;
      conditions.push(
        `${shared.strategy} if you run more than one instance and need staleness under ${ttl} (each local copy is stale until it expires; measured here with 1 instance); otherwise local`,
      );
    }
  }
  const spare = eligible
    .filter((f) => f.dbQueriesPerS !== null && pick.dbQueriesPerS !== null)
    .filter((f) => (f.dbQueriesPerS as number) <= 0.5 * (pick.dbQueriesPerS as number))
    .sort((a, b) => (a.dbQueriesPerS as number) - (b.dbQueriesPerS as number))[0];
  if (spare) {
    conditions.push(
      `${spare.strategy} if the database is the constraint (DB ${percentChange(spare.dbQueriesPerS, pick.dbQueriesPerS)} vs ${pick.strategy}); otherwise ${pick.strategy}`,
    );
  }
  return { pick: pick.strategy, tied: tied.map((f) => f.strategy), conditions, noConfidence, excluded };
}
