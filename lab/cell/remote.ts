/**
 * A server the lab did not start (`--server-url`): a cachelab server someone runs on their own hardware,
 * identified by its GET /info, reset between cells by its POST /admin/reset, verified and measured like
 * one the lab started. The lab cannot restart it, limit its CPU, or put Toxiproxy between it and its
 * services, so only cells whose plan it already matches run against it; the others are named with the
 * settings a server would need for them.
 */
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { IDENTITY_QUERY, identityOf, runIdOf } from "../../server/identity.ts";
import type { ServerInfo } from "../../server/lab_routes.ts";
import type { StrategyName } from "../../server_config.ts";
import type { Cell, Experiment, ExperimentAttack, ServerSettings } from "../plan/experiment_plan.ts";
import { cellSettings, proxiedServices } from "../plan/experiment_plan.ts";
import { envAdminToken, postAdmin } from "./admin.ts";
import type { ServerProcess } from "./server_process.ts";

export interface RemoteServer extends ServerProcess {
  remote: true;
  info: ServerInfo;
}

/** GET /info of each URL, as servers the lab drives but does not own; a string says which did not answer. */
export async function connectRemoteServers(urls: string[]): Promise<RemoteServer[] | string> {
  const servers: RemoteServer[] = [];
  for (const raw of urls) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return `Cannot use --server-url ${raw}: expected a URL like http://10.0.0.5:3000`;
    }
    if (url.protocol !== "http:" || url.pathname !== "/" || url.search !== "") {
      return `Cannot use --server-url ${raw}: expected http://HOST:PORT, the server's root`;
    }
    const base = url.origin;
    const info = await readInfo(base);
    if (typeof info === "string") return info;
    if (servers.some((server) => server.info.instanceId === info.instanceId)) {
      return `Cannot use --server-url ${raw}: it is the same server process as another URL (instance ${info.instanceId})`;
    }
    servers.push({
      remote: true,
      info,
      url: base,
      port: Number(url.port || 80),
      pid: info.pid,
      // The owner's token, handed to the lab through its environment.
      adminToken: envAdminToken(),
      output: () => "",
      // Not the lab's to stop.
      stop: async () => null,
      cpuLimit: null,
      cpuThrottling: () => null,
    });
  }
  return servers;
}

/** A cachelab server's GET /info at `base`, or why there is none (no answer, or not a cachelab server's). */
export async function readInfo(base: string, timeoutMs = 5_000): Promise<ServerInfo | string> {
  let info: Partial<ServerInfo>;
  try {
    const response = await fetch(`${base}/info`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return `Cannot use the server at ${base}: GET /info answered ${response.status}`;
    info = (await response.json()) as Partial<ServerInfo>;
  } catch (error) {
    return `Cannot reach the server at ${base}: ${(error as Error).message}`;
  }
  if (typeof info.instanceId !== "string" || typeof info.settings !== "object") {
    return `Cannot use the server at ${base}: GET /info is not a cachelab server's answer`;
  }
  return info as ServerInfo;
}

export function isRemote(server: ServerProcess): server is RemoteServer {
  return (server as Partial<RemoteServer>).remote === true;
}

const ALL: StrategyName[] = ["none", "local", "redis", "two_tier", "tracking"];
const CACHING: StrategyName[] = ["local", "redis", "two_tier", "tracking"];

/**
 * The server settings a remote server is compared on: the field, the environment variable that sets it,
 * and the strategies it changes anything for (the row leaves it empty for the others).
 */
const COMPARED = [
  ["pgDriver", "PG_DRIVER", ALL],
  ["redisClient", "REDIS_CLIENT", ["redis", "two_tier"]],
  ["pgPoolMax", "PG_POOL_MAX", ALL],
  ["pgQueueMax", "PG_QUEUE_MAX", ALL],
  ["pgAcquireTimeoutMs", "PG_ACQUIRE_TIMEOUT_MS", ALL],
  ["maxEventLoopDelayMs", "MAX_EVENT_LOOP_DELAY_MS", ALL],
  ["cacheTtlMs", "CACHE_TTL_MS", CACHING],
  ["l1TtlMs", "L1_TTL_MS", ["two_tier", "tracking"]],
  ["l1MaxEntries", "L1_MAX_ENTRIES", ["local", "two_tier", "tracking"]],
  ["earlyRefreshBeta", "EARLY_REFRESH_BETA", CACHING],
] as const satisfies readonly (readonly [keyof ServerSettings, string, readonly StrategyName[]])[];

/** The environment a server needs to run this cell's strategy and settings (what `bun run server` reads). */
export function serverEnvironment(strategy: StrategyName, settings: ServerSettings): string {
  return [
    `CACHE_STRATEGY=${strategy}`,
    ...COMPARED.map(([field, name]) => `${name}=${settings[field]}`),
  ].join(" ");
}

/**
 * Why these remote servers cannot stand for this cell's servers, or null when they can: the strategy and
 * every compared setting equal, as many servers as the cell has instances, and nothing the lab would have to
 * do to a process or a path it does not own (a CPU limit, Redis's maxmemory, Toxiproxy, generator hosts).
 */
export function remoteMismatch(
  servers: RemoteServer[],
  cell: Pick<Cell, "strategy" | "attacks">,
  settings: ServerSettings,
): string | null {
  const reasons: string[] = [];
  if (settings.instances !== servers.length) {
    reasons.push(`${settings.instances} instance(s) planned, ${servers.length} server URL(s) given`);
  }
  if (settings.cpuLimit !== null)
    reasons.push(`a CPU limit of ${settings.cpuLimit} cores is the lab's to set`);
  if (settings.redisMaxmemoryMb !== null) reasons.push("a Redis maxmemory is the lab's to set");
  if (settings.apart) reasons.push("a server in a host of its own is a namespace the lab makes");
  const proxied = proxiedServices(cell.attacks);
  if (proxied.length > 0) reasons.push(`${proxied.join(" and ")} reached through the lab's Toxiproxy`);
  if (cell.attacks.some((attack: ExperimentAttack) => (attack.loadgenHosts ?? 0) > 0)) {
    reasons.push("load-generator hosts are this machine's namespaces");
  }
  for (const server of servers) {
    const differences: string[] = [];
    if (server.info.strategy !== cell.strategy)
      differences.push(`strategy ${server.info.strategy}, not ${cell.strategy}`);
    for (const [field, name, usedBy] of COMPARED) {
      if (!(usedBy as readonly StrategyName[]).includes(cell.strategy)) continue;
      if (server.info.settings[field] !== settings[field]) {
        differences.push(`${name}=${server.info.settings[field]}, not ${settings[field]}`);
      }
    }
    if (differences.length > 0) reasons.push(`${server.url} runs ${differences.join(", ")}`);
  }
  return reasons.length === 0 ? null : reasons.join("; ");
}

/**
 * Why the lab's own database and Redis are not the ones the servers read, or null: the same Postgres cluster
 * (system identifier, when both sides may read it) and database, and for the strategies with Redis the same
 * Redis process (run_id). Verification, the reseed and pg_stat_statements all go through the lab's.
 */
export async function identityMismatch(
  servers: RemoteServer[],
  sql: postgres.Sql,
  redis: Redis,
): Promise<string | null> {
  const mine = identityOf(await sql.unsafe(IDENTITY_QUERY));
  const runId = runIdOf(await redis.info("server"));
  for (const server of servers) {
    const theirs = server.info.database;
    if (theirs === null) return `the server at ${server.url} cannot read its database (GET /info)`;
    const cluster = (id: string | null) => (id === null ? "" : ` on cluster ${id}`);
    if (
      theirs.name !== mine.name ||
      (theirs.systemIdentifier !== null &&
        mine.systemIdentifier !== null &&
        theirs.systemIdentifier !== mine.systemIdentifier)
    ) {
      return (
        `the server at ${server.url} reads database ${theirs.name}${cluster(theirs.systemIdentifier)}, the lab ` +
        `${mine.name}${cluster(mine.systemIdentifier)}: set DATABASE_URL to the server's database`
      );
    }
    if (["redis", "two_tier", "tracking"].includes(server.info.strategy)) {
      if (server.info.redis === null) return `the server at ${server.url} cannot reach its Redis (GET /info)`;
      if (server.info.redis.runId !== runId) {
        return `the server at ${server.url} uses Redis ${server.info.redis.runId}, the lab ${runId}: set REDIS_URL to the server's Redis`;
      }
    }
  }
  return null;
}

/** POST /admin/reset on each: a fresh, empty cache and the server's Redis keys deleted, as a restart would. */
export async function resetRemoteServers(servers: RemoteServer[]): Promise<void> {
  for (const server of servers) {
    await postAdmin(server, "/admin/reset", { timeoutMs: 30_000, what: `reset the server at ${server.url}` });
  }
}

/** How the row describes a remote server's place: its URL and the machine it says it runs on. */
export function describeRemote(servers: RemoteServer[]): string {
  const machines = servers.map(({ url, info: { machine } }) => {
    return `${url} on ${machine.hostname} (${machine.cpuCount}× ${machine.cpuModel}, ${machine.memTotalGb} GB)`;
  });
  return `remote server${servers.length === 1 ? "" : "s"} the lab did not start: ${machines.join(", ")}; load tool on this machine`;
}

/**
 * The cells remote servers can stand for, and a line per kind of cell they cannot (with the environment a
 * server would need); a string when none is left.
 */
export function remoteCells(
  servers: RemoteServer[],
  exp: Experiment,
  cellList: Cell[],
): { cells: Cell[]; skipped: string[] } | string {
  const runnable: Cell[] = [];
  const skipped = new Map<string, { count: number; env: string }>();
  for (const cell of cellList) {
    const settings = cellSettings(exp, cell);
    const reason = remoteMismatch(servers, cell, settings);
    if (reason === null) {
      runnable.push(cell);
      continue;
    }
    const entry = skipped.get(reason) ?? { count: 0, env: serverEnvironment(cell.strategy, settings) };
    entry.count++;
    skipped.set(reason, entry);
  }
  const lines = [...skipped].map(
    ([reason, { count, env }]) =>
      `skipped ${count} cell${count === 1 ? "" : "s"}: ${reason} (a server for them: ${env})`,
  );
  if (runnable.length === 0) return `no cell matches the server\n${lines.join("\n")}`;
  return { cells: runnable, skipped: lines };
}
