/**
 * Several server instances as one: a cell of N instances starts N processes of its strategy on the run's
 * ports (sharing Postgres and Redis), reads their /stats as one sum, and keeps each instance's own figures
 * for the row's spread. One instance is the same code path with N = 1.
 */
import type { StrategyName } from "../../server_config.ts";
import type { ServerSettings } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { processUsage, type ServerStatsSnapshot, serverStats, startStatsWindow } from "./counters.ts";
import { isRemote } from "./remote.ts";
import { type ServerProcess, startCellServer } from "./server_process.ts";

/**
 * N servers, started one after another (each waits for /ready), so a failure names its instance; when one
 * cannot start, those already running are stopped before the error is thrown.
 */
export async function startCellServers(
  strategy: StrategyName,
  options: {
    ports: number[];
    /** The address every instance listens on (default 127.0.0.1). */
    hostname?: string;
    /** Runs every instance in a host of its own (`host.command([])`). */
    prefix?: string[];
    entry?: string;
    /** METRICS=1: GET /metrics on (`--prometheus`). */
    metrics?: boolean;
    services: Pick<Services, "databaseUrl" | "redisUrl" | "redisCluster">;
    settings: ServerSettings;
    redisPrefix: string;
  },
): Promise<ServerProcess[]> {
  const { instances } = options.settings;
  if (options.ports.length < instances) {
    throw new RangeError(
      `Cannot start ${instances} instances: ${instances} ports needed: received ${options.ports.length}`,
    );
  }
  const servers: ServerProcess[] = [];
  try {
    for (const port of options.ports.slice(0, instances)) {
      servers.push(await startCellServer(strategy, { ...options, port }));
    }
  } catch (error) {
    await stopServers(servers);
    const which = instances > 1 ? ` (instance ${servers.length + 1} of ${instances})` : "";
    throw new Error(`${(error as Error).message}${which}`);
  }
  return servers;
}

export async function stopServers(servers: ServerProcess[]): Promise<void> {
  await Promise.all(servers.map((server) => server.stop()));
}

/** Counters that are a high-water mark of one process: the group's is the largest, not a sum. */
const PEAKS = new Set(["dbWaitingPeak"]);

/**
 * The instances' /stats as one: every count summed (tiers per name), a peak the largest, a count any
 * instance lacks (null or absent) left out, never read as 0. `distinctKeys` is then the sum of each
 * instance's distinct keys: a key read on two instances counts twice, as each instance's cache sees it.
 */
export function sumStats(snapshots: ServerStatsSnapshot[]): ServerStatsSnapshot {
  const [first, ...rest] = snapshots;
  if (first === undefined) throw new RangeError("Cannot sum server stats: no snapshot");
  if (rest.length === 0) return first;
  const sum: Record<string, unknown> = {};
  for (const name of Object.keys(first)) {
    const values = snapshots.map((snapshot) => (snapshot as unknown as Record<string, unknown>)[name]);
    if (name === "tiers") continue;
    if (values.every((v): v is number => typeof v === "number")) {
      sum[name] = PEAKS.has(name) ? Math.max(...values) : values.reduce((a, b) => a + b, 0);
    } else if (values.every((v) => typeof v === "string")) {
      sum[name] = [...new Set(values as string[])].join(",");
    } else if (values.every((v) => v === null)) {
      sum[name] = null;
    }
  }
  const tiers: ServerStatsSnapshot["tiers"] = {};
  const names = new Set(snapshots.flatMap((snapshot) => Object.keys(snapshot.tiers)));
  for (const name of names) {
    const parts = snapshots.map((snapshot) => snapshot.tiers[name]);
    if (parts.some((part) => part === undefined)) continue;
    tiers[name] = {
      hits: parts.reduce((a, part) => a + (part?.hits ?? 0), 0),
      misses: parts.reduce((a, part) => a + (part?.misses ?? 0), 0),
    };
  }
  sum.tiers = tiers;
  return sum as unknown as ServerStatsSnapshot;
}

/** Each instance's counters at one instant (in parallel), and their sum. */
export interface GroupStats {
  sum: ServerStatsSnapshot;
  each: ServerStatsSnapshot[];
}

export async function groupStats(servers: ServerProcess[]): Promise<GroupStats> {
  const each = await Promise.all(servers.map((server) => serverStats(server)));
  return { sum: sumStats(each), each };
}

/** A new distinct-key window on every instance, and the counters at its start. */
export async function groupStatsWindow(servers: ServerProcess[]): Promise<GroupStats> {
  const each = await Promise.all(servers.map((server) => startStatsWindow(server)));
  return { sum: sumStats(each), each };
}

/**
 * CPU seconds and peak RSS summed over the instances, or null when any process cannot be read: from /proc
 * for the servers the lab started, from the server's own /stats (`stats`, taken at the same moment) for a
 * remote one, whose pid is another machine's.
 */
export function groupUsage(
  servers: ServerProcess[],
  stats: GroupStats,
): { cpuS: number; rssPeakMb: number } | null {
  const usages = servers.map((server, i) =>
    isRemote(server) ? (stats.each[i]?.process ?? null) : processUsage(server.pid),
  );
  if (usages.some((usage) => usage === null)) return null;
  return {
    cpuS: usages.reduce((sum, usage) => sum + (usage?.cpuS ?? 0), 0),
    rssPeakMb: Math.round(usages.reduce((sum, usage) => sum + (usage?.rssPeakMb ?? 0), 0) * 10) / 10,
  };
}

/**
 * Why the counters between two snapshots are not one process's, or null: an instance that restarted (a new
 * instanceId) or was reset (POST /admin/reset gives the strategy fresh counters) between them.
 */
export function continuityProblem(before: GroupStats, after: GroupStats): string | null {
  for (let i = 0; i < after.each.length; i++) {
    const a = before.each[i];
    const b = after.each[i];
    const which = after.each.length > 1 ? ` (instance ${i + 1} of ${after.each.length})` : "";
    if (a?.instanceId !== b?.instanceId)
      return `the server restarted during the run${which}: its counters are another process's`;
    if ((a?.resets ?? 0) !== (b?.resets ?? 0))
      return `the server was reset during the run${which}: its cache and counters started over`;
  }
  return null;
}

/**
 * One figure per instance, as the row keeps the spread: `"5012/4988"`; null with one instance (the figure
 * is the row's own) or when any instance lacks the count.
 */
export function spread(before: GroupStats, after: GroupStats, name: string): string | null {
  if (after.each.length < 2) return null;
  const parts: number[] = [];
  for (let i = 0; i < after.each.length; i++) {
    const a = (before.each[i] as unknown as Record<string, unknown>)?.[name];
    const b = (after.each[i] as unknown as Record<string, unknown>)[name];
    if (typeof a !== "number" || typeof b !== "number") return null;
    parts.push(b - a);
  }
  return parts.join("/");
}
