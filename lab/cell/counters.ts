/**
 * What a measured run is counted with besides the tool: the server's /stats and its window, the database's
 * pg_stat_statements (used only when it agrees with the server), and the server process's CPU and RSS.
 */
import { readFileSync } from "node:fs";
import type postgres from "postgres";
import type { ServerStats } from "../../server/meter.ts";
import { postAdmin } from "./admin.ts";
import type { ServerProcess } from "./server_process.ts";

/** User + system CPU seconds and peak RSS (MB) of a process, from /proc. */
export function processUsage(pid: number): { cpuS: number; rssPeakMb: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const hwmKb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
    return { cpuS: ticks / 100, rssPeakMb: Math.round(hwmKb / 102.4) / 10 };
  } catch {
    return null;
  }
}

export type ServerStatsSnapshot = Pick<
  ServerStats,
  | "requests"
  | "dbQueries"
  | "reads"
  | "readDbQueries"
  | "writes"
  | "distinctKeys"
  | "probes"
  | "probeDbQueries"
  | "cacheErrors"
  | "tiers"
> &
  Partial<
    Pick<
      ServerStats,
      | "pgDriver"
      | "redisClient"
      | "instanceId"
      | "resets"
      | "process"
      | "dbLoadMs"
      | "requestMs"
      | "requestCounts"
      | "requestTimedEvery"
      | "redisCommandMs"
    >
  >;

/**
 * after − before of a counter the server's /stats may carry (shed, loadWaits, …), or null when it does not
 * (an older server, or a strategy without it): a missing count is never 0.
 */
export function counterDelta(before: object, after: object, name: string): number | null {
  const a = (before as Record<string, unknown>)[name];
  const b = (after as Record<string, unknown>)[name];
  return typeof a === "number" && typeof b === "number" ? b - a : null;
}

/**
 * The row's hit ratio between two snapshots: reads answered without a database query ÷ reads, or null
 * without reads. Early refresh's background loads answer no read, so they are not misses.
 */
export function readHitRatio(before: ServerStatsSnapshot, after: ServerStatsSnapshot): number | null {
  const reads = after.reads - before.reads;
  if (reads <= 0) return null;
  const refreshLoads = counterDelta(before, after, "refreshLoads") ?? 0;
  return 1 - (after.readDbQueries - before.readDbQueries - refreshLoads) / reads;
}

export async function serverStats(server: Pick<ServerProcess, "url">): Promise<ServerStatsSnapshot> {
  const response = await fetch(`${server.url}/stats`, { signal: AbortSignal.timeout(2_000) });
  if (!response.ok) throw new Error(`Cannot read /stats: ${response.status}`);
  return (await response.json()) as ServerStatsSnapshot;
}

/** The server's counters at this instant, and a new window for its distinct-key count. */
export async function startStatsWindow(
  server: Pick<ServerProcess, "url" | "adminToken">,
): Promise<ServerStatsSnapshot> {
  const response = await postAdmin(server, "/stats/window", {
    timeoutMs: 2_000,
    what: "start a /stats window",
  });
  return (await response.json()) as ServerStatsSnapshot;
}

/**
 * Calls of statements on `products` so far, or null when pg_stat_statements is not available or holds none
 * (an empty or reset view is no count, never 0 queries).
 */
export async function pgStatementCalls(sql: postgres.Sql): Promise<number | null> {
  try {
    const [row] = await sql<{ calls: string | null }[]>`
      select sum(calls)::text as calls from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query ilike '%products%' and query not ilike '%pg_stat_statements%'`;
    return row?.calls === null || row?.calls === undefined ? null : Number(row.calls);
  } catch {
    return null;
  }
}

/**
 * The database's own query count when it agrees with the server's within the requests in flight, in both
 * directions; else the server's count, saying why. `probeQueries` (the lab's own checks) are taken out.
 */
export function chooseDbQueries(counts: {
  server: number;
  probeQueries: number;
  pgDelta: number | null;
  inFlight: number;
}): { dbQueries: number; source: string } {
  const { server, probeQueries, pgDelta, inFlight } = counts;
  const expected = server + probeQueries;
  if (pgDelta === null) {
    return { dbQueries: server, source: "server_counter (pg_stat_statements unavailable or empty)" };
  }
  if (pgDelta > expected + inFlight) {
    return {
      dbQueries: server,
      source: `server_counter (pg_stat_statements saw ${pgDelta}: other clients on this database)`,
    };
  }
  if (pgDelta < expected - inFlight) {
    return {
      dbQueries: server,
      source: `server_counter (pg_stat_statements saw ${pgDelta}, fewer than the server sent: reset or evicted)`,
    };
  }
  return { dbQueries: pgDelta - probeQueries, source: "pg_stat_statements" };
}

/** The hit ratio of the first of `names` the server counts as a tier, between two snapshots; null without lookups. */
export function tierRatio(
  before: ServerStatsSnapshot,
  after: ServerStatsSnapshot,
  names: string[],
): number | null {
  for (const name of names) {
    const a = after.tiers[name];
    if (!a) continue;
    const b = before.tiers[name] ?? { hits: 0, misses: 0 };
    const hits = a.hits - b.hits;
    const lookups = hits + a.misses - b.misses;
    return lookups > 0 ? hits / lookups : null;
  }
  return null;
}
