/**
 * What the runner checks and reads around a measured attack: the server's answers before load (verification),
 * its counters, the database's statement counts, process usage from /proc, the lab's Redis keys, and whether a
 * result can be trusted.
 */
import { readFileSync } from "node:fs";
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { ensureSeeded, type SeedPlan } from "../../seed/seed.ts";
import type { ServerStats } from "../../server.ts";
import type { NormalizedResult } from "../plan/plan.ts";
import type { ServerProcess } from "./server_process.ts";

/** Prefix of every Redis key the lab's servers write (and the reset deletes). */
export const REDIS_PREFIX = "cachelab:lab:";

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
>;

export async function serverStats(server: ServerProcess): Promise<ServerStatsSnapshot> {
  const response = await fetch(`${server.url}/stats`, { signal: AbortSignal.timeout(2_000) });
  if (!response.ok) throw new Error(`Cannot read /stats: ${response.status}`);
  return (await response.json()) as ServerStatsSnapshot;
}

/** The server's counters at this instant, and a new window for its distinct-key count. */
export async function startStatsWindow(server: ServerProcess): Promise<ServerStatsSnapshot> {
  const response = await fetch(`${server.url}/stats/window`, {
    method: "POST",
    signal: AbortSignal.timeout(2_000),
  });
  if (!response.ok) throw new Error(`Cannot start a /stats window: ${response.status}`);
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

/**
 * A cell's reset: the seed reloaded when asked (experiments that write change rows, so each cell starts from
 * the seed), then the lab's Redis keys deleted.
 */
export async function resetCell(options: {
  sql: postgres.Sql;
  redis: Redis;
  seed: SeedPlan;
  reseed: boolean;
}): Promise<void> {
  if (options.reseed) await ensureSeeded(options.sql, options.seed);
  await flushLabKeys(options.redis);
}

/** Deletes the lab's Redis keys (SCAN + UNLINK; never KEYS or FLUSHALL). */
export async function flushLabKeys(redis: Redis): Promise<number> {
  let cursor = "0";
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${REDIS_PREFIX}*`, "COUNT", 1_000);
    cursor = next;
    if (keys.length > 0) removed += await redis.unlink(...keys);
  } while (cursor !== "0");
  return removed;
}

/** TechEmpower-style checks before load: real rows byte-equal to the database, bad input refused. */
export async function verifyServer(
  server: ServerProcess,
  sql: postgres.Sql,
  options: { rows: number; avoidKeyspace: number },
): Promise<string | null> {
  // Ids outside the attack's keyspace when there are any, so verification does not warm the attack's keys.
  const low = options.avoidKeyspace < options.rows ? options.avoidKeyspace + 1 : 1;
  const ids = Array.from({ length: 10 }, () => low + Math.floor(Math.random() * (options.rows - low + 1)));
  const expected = await sql<{ id: number; body: string }[]>`
    select id, json_build_object('id', id, 'name', name, 'categoryId', category_id, 'priceCents', price_cents,
      'stock', stock, 'description', description, 'version', version,
      'updatedAt', to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text as body
    from products where id = any(${ids}::int[])`;
  const byId = new Map(expected.map((row) => [row.id, JSON.stringify(JSON.parse(row.body))]));
  for (const id of ids) {
    const response = await fetch(`${server.url}/products/${id}`);
    const body = await response.text();
    if (response.status !== 200) return `verification: GET /products/${id} answered ${response.status}`;
    if (body !== byId.get(id))
      return `verification: GET /products/${id} body differs from the database row (version or fields)`;
  }
  const category = 1 + Math.floor(Math.random() * 50);
  const page = await sql<
    { id: number }[]
  >`select id from products where category_id = ${category} order by id limit 5`;
  const list = (await (await fetch(`${server.url}/products?category=${category}&size=5`)).json()) as {
    items?: { id: number }[];
  };
  if (JSON.stringify(list.items?.map((item) => item.id)) !== JSON.stringify(page.map((row) => row.id))) {
    return `verification: list page of category ${category} differs from the database`;
  }
  for (const [path, status] of [
    ["/products/0", 400],
    ["/products/abc", 400],
    [`/products/${options.rows + 1}`, 404],
    ["/products?category=1&size=0", 400],
  ] as const) {
    const response = await fetch(`${server.url}${path}`);
    if (response.status !== status)
      return `verification: GET ${path} answered ${response.status}, expected ${status}`;
  }
  return null;
}

/** Why a measured result cannot be trusted, or null. */
export function judge(
  result: NormalizedResult,
  context: { maxErrorRatio: number; serverRequests: number; inFlightAllowance: number },
): string | null {
  if (result.completed === null || result.ok === null) return "the tool reported no completed/ok counts";
  const transportErrors = Object.values(result.errorCounts ?? {}).reduce((a, b) => a + b, 0);
  const attempted = result.completed + transportErrors;
  if (attempted === 0) return "no requests were answered";
  const errors = result.completed - result.ok + transportErrors;
  if (errors / attempted > context.maxErrorRatio) {
    return `error ratio ${(errors / attempted).toFixed(4)} > ${context.maxErrorRatio} (${errors} of ${attempted})`;
  }
  if (
    result.offeredRps !== null &&
    result.achievedRps !== null &&
    result.achievedRps < 0.95 * result.offeredRps
  ) {
    return `dropped load: achieved ${result.achievedRps.toFixed(1)} rps < 95% of offered ${result.offeredRps.toFixed(1)}`;
  }
  if (Math.abs(context.serverRequests - result.completed) > context.inFlightAllowance) {
    return `the server counted ${context.serverRequests} requests but the tool ${result.completed}`;
  }
  return null;
}

/**
 * The allowed gap between a measured hit ratio and the simulation of the same key stream, for a tool that
 * says exactly which targets it sent. A sampling tool (oha) does not: its simulation runs on an emulated
 * draw, and the gap may also hold the two draws' difference (see `sampledHitRatioTolerance`).
 */
export const HIT_RATIO_TOLERANCE = 0.02;

/**
 * The tolerance for a sampling tool: its real and emulated draws each find a number of new keys with
 * standard deviation ≈ `distinctSd` (of `reads` draws), so their hit ratios differ by up to 4·√2·sd ÷ reads.
 */
export function sampledHitRatioTolerance(distinctSd: number, reads: number): number {
  return reads > 0
    ? Math.max(HIT_RATIO_TOLERANCE, (4 * Math.SQRT2 * distinctSd) / reads)
    : HIT_RATIO_TOLERANCE;
}

/** What a measured run is checked against besides its tool's counts. */
export interface StreamEvidence {
  targetsSent: number;
  reused: number;
  /** The re-sent share the run may have: 0, a sampler's tolerance, or what the experiment declares. */
  allowedReuseRatio: number;
  distinctKeys: number;
  distinctKeysExpected: number;
  distinctKeysTolerance: number;
  hitRatio: number | null;
  hitRatioExpected: number | null;
  hitRatioTolerance: number;
  cacheErrors: number;
  faultsDeclared: boolean;
  staleChecksFailed: number;
}

/** Why the run was not the fresh, clean stream it claims to be, or null. */
export function judgeStream(evidence: StreamEvidence): string | null {
  const reasons: string[] = [];
  const e = evidence;
  if (e.targetsSent > 0 && e.reused / e.targetsSent > e.allowedReuseRatio) {
    reasons.push(
      `re-sent targets: ${e.reused} of ${e.targetsSent} requests repeated a stream position ` +
        `(ratio ${(e.reused / e.targetsSent).toFixed(4)} > ${e.allowedReuseRatio})`,
    );
  }
  if (Math.abs(e.distinctKeys - e.distinctKeysExpected) > e.distinctKeysTolerance) {
    reasons.push(
      `distinct keys: the server saw ${e.distinctKeys}, a fresh stream of ${Math.round(e.targetsSent - e.reused)} requests gives ` +
        `${e.distinctKeysExpected.toFixed(0)} ± ${e.distinctKeysTolerance.toFixed(0)}`,
    );
  }
  if (
    e.hitRatio !== null &&
    e.hitRatioExpected !== null &&
    Math.abs(e.hitRatio - e.hitRatioExpected) > e.hitRatioTolerance
  ) {
    reasons.push(
      `hit ratio ${e.hitRatio.toFixed(3)} deviates from the simulation of the same key stream ` +
        `(${e.hitRatioExpected.toFixed(3)}) by more than ${e.hitRatioTolerance.toFixed(3)}`,
    );
  }
  if (e.cacheErrors > 0 && !e.faultsDeclared) {
    reasons.push(`${e.cacheErrors} cache errors were swallowed (the experiment declares no faults)`);
  }
  if (e.staleChecksFailed > 0) reasons.push(`${e.staleChecksFailed} stale-read checks failed`);
  return reasons.length === 0 ? null : reasons.join("; ");
}
