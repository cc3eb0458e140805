/**
 * Tier costs from base rows: per strategy, the median over its valid repeats of what each outcome cost the
 * server (srv_<outcome>_mean_ms), a Redis command and a database load, each with the reason when missing.
 * Rows are read by column name; a missing or empty column is unknown, never 0.
 */
import { decodeHistogram, type Points, pooledPercentileMs } from "./histogram.ts";
import { isStrategy, OUTCOMES, type Outcome, ROUND_TRIPS, type Strategy } from "./round_trips.ts";

/** A CSV row as the results read it (lab/results/summary.ts's ResultRow). */
export type Row = Record<string, string | number | boolean | null>;

/** An outcome's mean counts only from a repeat with at least this many requests of it. */
export const MIN_OUTCOME_COUNT = 30;

/** A number from a typed or untyped cell; anything else (null, "", text) is unknown. */
export function numeric(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value)))
    return Number(value);
  return null;
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The median of a column over rows, skipping unknown cells; null when every cell is unknown. */
export function medianColumn(rows: Row[], column: string): number | null {
  return median(rows.map((row) => numeric(row[column])).filter((v): v is number => v !== null));
}

/**
 * What a row added per database (`postgres`) or Redis round trip, ms: its `*_added_ms` column where the row
 * has one; in a CSV written before those columns, `miss_cost_ms` / `redis_rtt_ms` were that added delay.
 */
export function addedMs(row: Row, path: "postgres" | "redis"): number {
  const [added, old] =
    path === "postgres" ? ["miss_cost_added_ms", "miss_cost_ms"] : ["redis_rtt_added_ms", "redis_rtt_ms"];
  return (added in row ? numeric(row[added]) : numeric(row[old])) ?? 0;
}

/** CPU seconds per request a base cell cost each process (the load tool's apart: it is not the server's). */
export interface CpuPerRequest {
  server: number;
  postgres: number;
  redis: number;
  loadgen: number | null;
  /** CPU seconds per second the server, Postgres and Redis took together (the cores they got), and the load tool. */
  coresUsed: number | null;
  loadgenCoresUsed: number | null;
}

export interface StrategyCosts {
  strategy: Strategy;
  /** The valid rows the costs are medians of. */
  repeats: number;
  /** Server-side mean per outcome (ms), for the outcomes this strategy has and the rows support. */
  outcomesMs: Partial<Record<Outcome, number>>;
  /** Why an outcome this strategy has carries no cost. */
  missing: Partial<Record<Outcome, string>>;
  redisCmdMs: number | null;
  dbLoadMs: number | null;
  srvMeanMs: number | null;
  hitRatio: number | null;
  hitRatioExpected: number | null;
  l1HitRatioExpected: number | null;
  /** What the base run itself added per database / Redis round trip (0 when direct or not recorded). */
  addedMissMs: number;
  addedRedisRttMs: number;
  redisBytesPerEntry: number | null;
  redisEntries: number | null;
  cacheTtlMs: number | null;
  l1TtlMs: number | null;
  l1MaxEntries: number | null;
  offeredRps: number | null;
  /** What the load tool completed per second (a closed-model cell's only rate). */
  achievedRps?: number | null;
  /** Each outcome's server-side latencies, pooled over the repeats (srv_<outcome>_hist), where rows have them. */
  outcomeHists: Partial<Record<Outcome, Points>>;
  /**
   * What HTTP and the load tool add to a request beyond the server's own time: the client's p50 less the
   * server-side p50 (the row's histograms pooled), median over the repeats; null without both.
   */
  httpOverheadMs: number | null;
  /** Each valid repeat's own costs, for intervals: the prediction made from each alone. */
  perRepeat: StrategyCosts[];
  /** Outcome shares as the server counted them in the base cells (srv_<outcome>_count), or null. */
  measuredShares: Record<Outcome, number> | null;
  /** Median CPU seconds per completed request, or null when a process's CPU is not in the rows. */
  cpuPerRequest: CpuPerRequest | null;
  /** The server's Postgres pool, its CPU limit in cores (null: none set) and the machine's cores. */
  pgPoolMax: number | null;
  cpuLimit: number | null;
  cpuCount: number | null;
}

/**
 * The server's outcomes a model outcome holds: the model's miss is a request that waited on a database load,
 * its own (`miss`) or one it joined (`join`, a column rows from before it lack).
 */
const SERVER_OUTCOMES: Record<Outcome, readonly string[]> = {
  l1_hit: ["l1_hit"],
  l2_hit: ["l2_hit"],
  miss: ["miss", "join"],
  write: ["write"],
};

/** A row's requests of an outcome (its server outcomes summed), null when the row counts none of them. */
function countOf(row: Row, outcome: Outcome): number | null {
  const counts = SERVER_OUTCOMES[outcome].map((o) => numeric(row[`srv_${o}_count`]));
  return counts.every((count) => count === null) ? null : counts.reduce<number>((a, b) => a + (b ?? 0), 0);
}

/** A row's mean of an outcome: its server outcomes' means weighted by their counts. */
function meanOf(row: Row, outcome: Outcome): number | null {
  let weight = 0;
  let sum = 0;
  for (const o of SERVER_OUTCOMES[outcome]) {
    const mean = numeric(row[`srv_${o}_mean_ms`]);
    const count = numeric(row[`srv_${o}_count`]);
    if (mean === null || count === null || count === 0) continue;
    weight += count;
    sum += mean * count;
  }
  return weight > 0 ? sum / weight : null;
}

function outcomeCost(valid: Row[], outcome: Outcome): number | string {
  const column = `srv_${outcome}_mean_ms`;
  const countColumn = `srv_${outcome}_count`;
  const counts = valid.map((row) => countOf(row, outcome));
  if (counts.every((count) => count === null)) return `no ${countColumn} in the rows`;
  const counted = valid.filter((_, i) => (counts[i] ?? 0) >= MIN_OUTCOME_COUNT);
  if (counted.length === 0) {
    const most = Math.max(0, ...counts.map((count) => count ?? 0));
    return `fewer than ${MIN_OUTCOME_COUNT} ${outcome} requests in every valid repeat (at most ${most})`;
  }
  const means = counted.map((row) => meanOf(row, outcome)).filter((v): v is number => v !== null);
  return means.length === 0 ? `no ${column} in the rows` : (median(means) as number);
}

function pooledHist(valid: Row[], outcome: Outcome): Points | undefined {
  const merged = new Map<number, number>();
  let seen = false;
  for (const row of valid) {
    for (const o of SERVER_OUTCOMES[outcome]) {
      const cell = row[`srv_${o}_hist`];
      if (typeof cell !== "string" || cell.trim() === "") continue;
      seen = true;
      for (const [ms, n] of decodeHistogram(cell)) merged.set(ms, (merged.get(ms) ?? 0) + n);
    }
  }
  return seen ? [...merged].sort((a, b) => a[0] - b[0]) : undefined;
}

/**
 * A row's server-side percentile: its outcomes' histograms (srv_<outcome>_hist) pooled; null without them or
 * with a malformed cell (the row's own checks say why).
 */
export function serverPercentileMs(row: Row, percent: number): number | null {
  try {
    return pooledPercentileMs(
      OUTCOMES.flatMap((o) => SERVER_OUTCOMES[o].map((server) => row[`srv_${server}_hist`])),
      percent,
    );
  } catch {
    return null;
  }
}

function sharesOf(valid: Row[]): Record<Outcome, number> | null {
  const totals = OUTCOMES.map((o) => valid.reduce((sum, row) => sum + (countOf(row, o) ?? 0), 0));
  const all = totals.reduce((a, b) => a + b, 0);
  if (!(all > 0)) return null;
  return Object.fromEntries(OUTCOMES.map((o, i) => [o, (totals[i] as number) / all])) as Record<
    Outcome,
    number
  >;
}

function cpuOf(valid: Row[]): CpuPerRequest | null {
  const per = (column: string) =>
    median(
      valid.flatMap((row) => {
        const cpu = numeric(row[column]);
        const done = numeric(row.completed);
        return cpu !== null && done !== null && done > 0 ? [cpu / done] : [];
      }),
    );
  const server = per("server_cpu_s");
  const postgres = per("postgres_cpu_s");
  const redis = per("redis_cpu_s");
  if (server === null || postgres === null || redis === null) return null;
  const cores = (columns: string[]) =>
    median(
      valid.flatMap((row) => {
        const each = columns.map((column) => numeric(row[column]));
        return each.every((v) => v !== null) ? [(each as number[]).reduce((a, b) => a + b, 0)] : [];
      }),
    );
  return {
    server,
    postgres,
    redis,
    loadgen: per("loadgen_cpu_s"),
    coresUsed: cores(["server_cpu_per_s", "postgres_cpu_per_s", "redis_cpu_per_s"]),
    loadgenCoresUsed: cores(["loadgen_cpu_per_s"]),
  };
}

/** A strategy's tier costs from its valid rows among `rows`, or why there are none. */
export function strategyCosts(rows: Row[], strategy: Strategy): StrategyCosts | string {
  const valid = rows.filter((row) => row.strategy === strategy && row.valid === true);
  if (valid.length === 0) return `${strategy}: no valid rows`;
  const costs = costsOf(valid, strategy);
  costs.perRepeat = valid.length > 1 ? valid.map((row) => costsOf([row], strategy)) : [];
  return costs;
}

function costsOf(valid: Row[], strategy: Strategy): StrategyCosts {
  const outcomesMs: Partial<Record<Outcome, number>> = {};
  const missing: Partial<Record<Outcome, string>> = {};
  for (const outcome of OUTCOMES) {
    if (ROUND_TRIPS[strategy][outcome] === undefined) continue;
    const cost = outcomeCost(valid, outcome);
    if (typeof cost === "number") outcomesMs[outcome] = cost;
    else missing[outcome] = cost;
  }
  const column = (name: string) => medianColumn(valid, name);
  return {
    strategy,
    repeats: valid.length,
    outcomesMs,
    missing,
    redisCmdMs: column("redis_cmd_mean_ms"),
    dbLoadMs: column("db_load_ms_mean"),
    srvMeanMs: column("srv_mean_ms"),
    hitRatio: column("hit_ratio"),
    hitRatioExpected: column("hit_ratio_expected"),
    l1HitRatioExpected: column("l1_hit_ratio_expected"),
    addedMissMs: median(valid.map((row) => addedMs(row, "postgres"))) ?? 0,
    addedRedisRttMs: median(valid.map((row) => addedMs(row, "redis"))) ?? 0,
    redisBytesPerEntry: column("redis_bytes_per_entry"),
    redisEntries: column("redis_entries"),
    cacheTtlMs: column("cache_ttl_ms"),
    l1TtlMs: column("l1_ttl_ms"),
    l1MaxEntries: column("l1_max_entries"),
    offeredRps: column("offered_rps"),
    achievedRps: column("achieved_rps"),
    outcomeHists: Object.fromEntries(
      OUTCOMES.flatMap((o) => {
        const points = pooledHist(valid, o);
        return points === undefined ? [] : [[o, points]];
      }),
    ),
    perRepeat: [],
    httpOverheadMs: median(
      valid.flatMap((row) => {
        const client = numeric(row.latency_p50_ms);
        const server = serverPercentileMs(row, 50);
        return client !== null && server !== null ? [client - server] : [];
      }),
    ),
    measuredShares: sharesOf(valid),
    cpuPerRequest: cpuOf(valid),
    pgPoolMax: column("pg_pool_max"),
    cpuLimit: column("server_cpu_limit"),
    cpuCount: column("cpu_count"),
  };
}

/** Whether any row carries the server-side timings (a run made before them has no srv_mean_ms). */
export function hasServerCosts(rows: Row[]): boolean {
  return rows.some((row) => numeric(row.srv_mean_ms) !== null);
}

/** Every strategy present in the rows, with its costs or the reason it has none. */
export function allCosts(rows: Row[]): { costs: StrategyCosts[]; skipped: string[] } {
  const names = [...new Set(rows.map((row) => row.strategy))].filter(isStrategy);
  const costs: StrategyCosts[] = [];
  const skipped: string[] = [];
  for (const name of names) {
    const found = strategyCosts(rows, name);
    if (typeof found === "string") skipped.push(found);
    else costs.push(found);
  }
  return { costs, skipped };
}

/**
 * two_tier's and tracking's Redis hit is the same GET as redis's: when their base cells had too few Redis
 * hits to time (their L1 answered them), redis's cost and distribution stand in, said in a note.
 */
export function withBorrowedL2(
  costs: StrategyCosts,
  all: StrategyCosts[],
): { costs: StrategyCosts; note: string | null } {
  if (costs.strategy !== "two_tier" && costs.strategy !== "tracking") return { costs, note: null };
  if (costs.outcomesMs.l2_hit !== undefined) return { costs, note: null };
  const redis = all.find((c) => c.strategy === "redis");
  const mean = redis?.outcomesMs.l2_hit;
  if (redis === undefined || mean === undefined) return { costs, note: null };
  const hist = redis.outcomeHists.l2_hit;
  const borrow = (c: StrategyCosts): StrategyCosts => ({
    ...c,
    outcomesMs: { ...c.outcomesMs, l2_hit: mean },
    outcomeHists: hist === undefined ? c.outcomeHists : { ...c.outcomeHists, l2_hit: hist },
    missing: { ...c.missing, l2_hit: undefined },
  });
  return {
    costs: { ...borrow(costs), perRepeat: costs.perRepeat.map(borrow) },
    note: `${costs.strategy}: its base cells timed too few Redis hits (${costs.missing.l2_hit ?? "none"}): redis's Redis hit (${Number(mean.toFixed(3))} ms, the same GET) stands in`,
  };
}
