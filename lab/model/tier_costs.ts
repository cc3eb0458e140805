/**
 * Tier costs from base rows: per strategy, the median over its valid repeats of what each outcome cost the
 * server (srv_<outcome>_mean_ms), a Redis command and a database load, each with the reason when missing.
 * Rows are read by column name; a missing or empty column is unknown, never 0.
 */
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

/** A round trip through a proxied path as the lab measured it beside the load, ms; null when not measured. */
export interface PathRttMs {
  postgres: number | null;
  redis: number | null;
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
  /** The round trips through the base cells' proxies as delivered (postgres_path_rtt_ms, redis_path_rtt_ms). */
  pathRttMs: PathRttMs;
  redisBytesPerEntry: number | null;
  redisEntries: number | null;
  cacheTtlMs: number | null;
  l1TtlMs: number | null;
  l1MaxEntries: number | null;
  offeredRps: number | null;
}

function outcomeCost(valid: Row[], outcome: Outcome): number | string {
  const column = `srv_${outcome}_mean_ms`;
  const countColumn = `srv_${outcome}_count`;
  const counts = valid.map((row) => numeric(row[countColumn]));
  if (counts.every((count) => count === null)) return `no ${countColumn} in the rows`;
  const counted = valid.filter((_, i) => (counts[i] ?? 0) >= MIN_OUTCOME_COUNT);
  if (counted.length === 0) {
    const most = Math.max(0, ...counts.map((count) => count ?? 0));
    return `fewer than ${MIN_OUTCOME_COUNT} ${outcome} requests in every valid repeat (at most ${most})`;
  }
  const means = counted.map((row) => numeric(row[column])).filter((v): v is number => v !== null);
  return means.length === 0 ? `no ${column} in the rows` : (median(means) as number);
}

/** A strategy's tier costs from its valid rows among `rows`, or why there are none. */
export function strategyCosts(rows: Row[], strategy: Strategy): StrategyCosts | string {
  const valid = rows.filter((row) => row.strategy === strategy && row.valid === true);
  if (valid.length === 0) return `${strategy}: no valid rows`;
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
    addedMissMs: column("miss_cost_ms") ?? 0,
    addedRedisRttMs: column("redis_rtt_ms") ?? 0,
    pathRttMs: { postgres: column("postgres_path_rtt_ms"), redis: column("redis_path_rtt_ms") },
    redisBytesPerEntry: column("redis_bytes_per_entry"),
    redisEntries: column("redis_entries"),
    cacheTtlMs: column("cache_ttl_ms"),
    l1TtlMs: column("l1_ttl_ms"),
    l1MaxEntries: column("l1_max_entries"),
    offeredRps: column("offered_rps"),
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
