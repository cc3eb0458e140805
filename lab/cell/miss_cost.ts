/**
 * What a miss cost in the measured run: the server's own timing of its database loads (between two /stats
 * snapshots, every instance merged) beside Postgres's mean execution time of the same read statements
 * (pg_stat_statements), and the check that ties the two: the server's time holds the execution plus the
 * round trip, so its mean can never be below Postgres's.
 */
import type postgres from "postgres";
import { type LoadTimes, loadTimesBetween } from "../../server/load_timer.ts";
import type { GroupStats } from "./instances.ts";

/** Calls and total execution ms of the read statements on `products`, or null without pg_stat_statements. */
export interface PgExecTimes {
  calls: number;
  totalExecMs: number;
}

/**
 * The loads' statements as pg_stat_statements holds them: the selects on products (detail, summary, list
 * pages), not the PUTs' updates, nor the lab's own reads of the view.
 */
export async function pgReadExecTimes(sql: postgres.Sql): Promise<PgExecTimes | null> {
  try {
    const [row] = await sql<{ calls: string | null; total_ms: number | null }[]>`
      select sum(calls)::text as calls, sum(total_exec_time)::float8 as total_ms from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query ilike 'select%' and query ilike '%"products"%' and query not ilike '%pg_stat_statements%'`;
    if (!row || row.calls === null || row.total_ms === null) return null;
    return { calls: Number(row.calls), totalExecMs: row.total_ms };
  } catch {
    return null;
  }
}

export interface MissCost {
  /** The workload's loads as the server timed them (detail, summary and list merged), or null. */
  load: LoadTimes | null;
  /** Postgres's mean execution time of the read statements over the run (probes' calls included), or null. */
  pgExecMeanMs: number | null;
  pgCalls: number | null;
}

export function missCost(
  beforeEach: GroupStats,
  afterEach: GroupStats,
  pgBefore: PgExecTimes | null,
  pgAfter: PgExecTimes | null,
): MissCost {
  const load = loadTimesBetween(
    beforeEach.each.map((stats) => stats.dbLoadMs),
    afterEach.each.map((stats) => stats.dbLoadMs),
  );
  const calls = pgBefore && pgAfter ? pgAfter.calls - pgBefore.calls : null;
  // A view reset or evicted during the run (fewer calls after) is no figure, never a negative time.
  const usable = pgBefore && pgAfter && calls !== null && calls > 0;
  return {
    load,
    pgExecMeanMs: usable
      ? Math.round(((pgAfter.totalExecMs - pgBefore.totalExecMs) / calls) * 1e4) / 1e4
      : null,
    pgCalls: calls !== null && calls >= 0 ? calls : null,
  };
}

/** How far below Postgres's mean the server's may read (timer and rounding noise): 5% and 10 µs. */
export const MISS_COST_TOLERANCE = { ratio: 0.05, ms: 0.01 };

/**
 * Why the server's load times cannot be the loads Postgres executed, or null. Only the lower bound is a
 * check: above it, the difference is the round trip and any queueing in the driver or the pool, which under
 * load may legitimately be many times the execution (the row shows both means).
 */
export function missCostProblem(cost: MissCost): string | null {
  const serverMean = cost.load?.meanMs ?? null;
  if (serverMean === null || cost.pgExecMeanMs === null || !cost.load?.count) return null;
  const floor = cost.pgExecMeanMs * (1 - MISS_COST_TOLERANCE.ratio) - MISS_COST_TOLERANCE.ms;
  if (serverMean >= floor) return null;
  return (
    `the server's mean database load ${serverMean.toFixed(4)} ms (${cost.load.count} loads) is below ` +
    `Postgres's mean execution time of the same statements ${cost.pgExecMeanMs.toFixed(4)} ms ` +
    `(${cost.pgCalls} calls): the load timer or the statements matched are wrong`
  );
}
