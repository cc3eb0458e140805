/**
 * What a run measures against: the services (found or started), Toxiproxy when a cell needs it, the lab's
 * Postgres and Redis clients, the lab's own miss cost and Redis round trip through its paths (the base the
 * figures asked are added over); and the refusals that keep a run off what is not the lab's: a database without
 * cachelab's marker, a Redis it did not start when a cell sets maxmemory, a remote server on other services.
 * On `--redis-server valkey` the lab's valkey-server is the run's Redis throughout: its servers', its own
 * client's, its proxies' and its rows'.
 */
import { join } from "node:path";
import { Cluster, Redis } from "ioredis";
import postgres from "postgres";
import { databaseOwnership, HANDOVER_ENV, HANDOVER_FLAG } from "../../seed/ownership.ts";
import { foundRedisMemoryLimit, restoreLeftRedisLimit } from "../cell/constraints.ts";
import { idleProbe, PROBE_SAMPLES } from "../cell/idle_probe.ts";
import { identityMismatch, type RemoteServer } from "../cell/remote.ts";
import { Toxiproxy } from "../faults/toxiproxy.ts";
import type { Experiment, ExperimentAttack } from "../plan/experiment_plan.ts";
import { addedOverBase, withAddedOverBase } from "../plan/overrides.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import type { RowContext } from "../results/cell_row.ts";
import {
  redisClusterUp,
  type Services,
  type ServicesOptions,
  servicesDown,
  servicesStatus,
  servicesUp,
  valkeyUp,
} from "../services/lifecycle.ts";
import { TOXIPROXY_MISSING } from "../services/native_toxiproxy.ts";
import { VALKEY_MISSING, valkeyBinary } from "../services/native_valkey.ts";
import { redactUrl } from "../services/probe.ts";
import { REPO_ROOT } from "../shared/repo.ts";

/** Where a cell's Redis limit records what it replaced, so a killed run's limit is put back (cell/constraints.ts). */
export const REDIS_LIMIT_RECORD = join(REPO_ROOT, ".cachelab", "redis-maxmemory.json");
/** The same for Valkey's: a run on one server never puts back, nor drops, a limit left on the other. */
export const VALKEY_LIMIT_RECORD = join(REPO_ROOT, ".cachelab", "valkey-maxmemory.json");

/** The servers a run's Redis tier can run on (`--redis-server`). */
export const REDIS_SERVERS = ["redis", "valkey"] as const;
export type RedisServer = (typeof REDIS_SERVERS)[number];

export interface RunServices {
  services: Services;
  sql: postgres.Sql;
  /** The lab's own Redis client (not a server's). */
  redis: Redis;
  /** On a `--redis-cluster` run, the lab's own client of its cluster, which the servers use; else null. */
  cluster: Cluster | null;
  toxiproxy: Toxiproxy | null;
  /** A maxmemory nobody in this run set (a killed run's cell limit, or the operator's), described; or null. */
  foundMemoryLimit: string | null;
  /** Where a cell's limit on this run's Redis records what it replaced (REDIS_LIMIT_RECORD or Valkey's). */
  limitRecord: string;
  /** Ends the clients; after an interrupted run, also stops the services this run started itself. */
  close(interrupted: boolean): Promise<void>;
}

export interface RunServicesOptions {
  name: string;
  /** The services to use instead of finding them (tests). */
  services?: Services;
  handedOver: boolean;
  remote: RemoteServer[] | null;
  baseUrls: string[];
  log: (line: string) => void;
  /** The servers on the lab's local Redis Cluster of three masters instead of its Redis (`--redis-cluster`). */
  redisCluster?: boolean;
  /** The run's Redis: the lab's Redis (default) or its valkey-server beside it (`--redis-server valkey`). */
  redisServer?: RedisServer;
}

/** What the plan says of a `--redis-server valkey` run: which valkey-server it would use, or that none is there. */
export function valkeyPlanLine(env: Record<string, string | undefined>): string {
  const lead =
    "redis: every Redis tier (redis, two_tier, tracking) on Valkey (--redis-server valkey), REDIS_URL on every server:";
  if (env.VALKEY_URL) return `${lead} VALKEY_URL's server, ${redactUrl(env.VALKEY_URL)}`;
  const binary = valkeyBinary(env);
  if (binary === null) return `${lead} none, a real run stops: ${VALKEY_MISSING}`;
  const version = Bun.spawnSync([binary, "--version"], { stdout: "pipe", stderr: "ignore" })
    .stdout.toString()
    .trim()
    .split(" ")
    .slice(0, 3)
    .join(" ");
  return `${lead} the lab's own valkey-server beside its Redis, ${binary} (${version || "its version unread"}), started once and stopped by \`bun run services down\``;
}

/** Why a `--redis-cluster` run cannot run these cells, or null. */
function clusterRefusal(cellList: SettledCell[]): string | null {
  const cell = cellList.find(
    (c) =>
      c.settings.redisMaxmemoryMb !== null || c.proxied.includes("redis") || c.settings.redisClient === "bun",
  );
  if (cell === undefined) return null;
  const why =
    cell.settings.redisMaxmemoryMb !== null
      ? "sets maxmemory, a setting of one Redis"
      : cell.proxied.includes("redis")
        ? "routes Redis through Toxiproxy, and a cluster client follows its nodes' own addresses past a proxy"
        : "runs on Bun's RedisClient, which has no cluster support";
  return `cell ${cell.index} (${cell.strategy}) ${why}`;
}

/** The run's services and clients, or why the run may not use them. */
export async function openRunServices(
  cellList: SettledCell[],
  options: RunServicesOptions,
): Promise<RunServices | string> {
  const { name, remote, log } = options;
  const refusedOnCluster = options.redisCluster ? clusterRefusal(cellList) : null;
  if (refusedOnCluster !== null) return `${name} cannot run on a Redis Cluster: ${refusedOnCluster}`;
  const onNodeRedis = options.redisCluster
    ? undefined
    : cellList.find((c) => c.settings.redisClient === "node-redis" && c.strategy !== "tracking");
  if (onNodeRedis !== undefined) {
    return `${name} cannot run cell ${onNodeRedis.index} (${onNodeRedis.strategy}) on one Redis: node-redis is the lab's client for tracking and a Redis Cluster only; add --redis-cluster`;
  }
  const before = options.services ? null : await servicesStatus({ log: () => {} });
  const found = options.services ?? (await servicesUp({ log }));
  const onValkey = options.redisServer === "valkey";
  // Valkey stands for Redis everywhere the run reaches Redis: its servers, its own client, its proxies, its rows.
  const valkey = onValkey ? await valkeyUp({ log }) : null;
  const onServer = valkey ? { ...found, redis: valkey, redisUrl: valkey.url } : found;
  const services = options.redisCluster
    ? { ...onServer, redisCluster: await redisClusterUp({ log }) }
    : onServer;
  const needsProxy = cellList.some((cell) => cell.proxied.length > 0);
  if (needsProxy && services.toxiproxy === null)
    return `${name} routes services through Toxiproxy: ${TOXIPROXY_MISSING}`;
  const toxiproxy = services.toxiproxy ? new Toxiproxy(services.toxiproxy.url) : null;
  // What this run started itself (nothing answered before it): all that Ctrl-C may stop.
  const startedServices: NonNullable<ServicesOptions["only"]> =
    before === null
      ? []
      : [
          ...(["postgres", "redis", "toxiproxy"] as const).filter(
            (service) => before[service] === null && found[service]?.startedByCachelab === true,
          ),
          ...(before.valkey === null && valkey?.startedByCachelab ? (["valkey"] as const) : []),
        ];
  const sql = postgres(services.databaseUrl, { max: 2, onnotice: () => {} });
  const redis = new Redis(services.redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
  });
  await redis.connect();
  const cluster = services.redisCluster ? await clusterClient(services.redisCluster) : null;
  // Nothing is written (tables, extension, reseed, PUTs) to a database that is not the lab's.
  const ownership = await databaseOwnership(sql, { handedOver: options.handedOver });
  // maxmemory is a setting of the whole Redis: only a Redis the lab started is the lab's to change.
  const limitsRedis = cellList.some((cell) => cell.settings.redisMaxmemoryMb !== null);
  const refusal = !ownership.owned
    ? `${name} cannot write to ${ownership.reason}; point DATABASE_URL at a database of cachelab's own (unset it and \`bun run services up\` starts one), or, if its rows may be replaced, hand it over with ${HANDOVER_FLAG} or ${HANDOVER_ENV}=1`
    : limitsRedis && remote === null && !services.redis.startedByCachelab
      ? `${name} sets maxmemory on Redis, and the Redis at ${redactUrl(services.redisUrl)} was not started by cachelab (${services.redis.mode}): its keys would be evicted; ${onValkey ? "unset VALKEY_URL so the lab starts a valkey-server of its own" : "unset REDIS_URL (and free 127.0.0.1:6379) so `bun run services up` starts one of the lab's own"}`
      : null;
  // A remote server must read the database and Redis the lab verifies against and counts in.
  const foreign = refusal === null && remote !== null ? await identityMismatch(remote, sql, redis) : null;
  if (refusal !== null || foreign !== null) {
    await sql.end({ timeout: 2 });
    redis.disconnect();
    cluster?.disconnect();
    return refusal ?? `${name} cannot run on ${options.baseUrls.join(", ")}: ${foreign}`;
  }
  // A limit a killed run left on the lab's Redis is put back as that run found it.
  const limitRecord = onValkey ? VALKEY_LIMIT_RECORD : REDIS_LIMIT_RECORD;
  const restored = await restoreLeftRedisLimit(redis, limitRecord);
  if (restored !== null) log(restored);
  const foundMemoryLimit = await foundRedisMemoryLimit(redis);
  if (foundMemoryLimit !== null) {
    log(
      `warning: the lab's Redis already has ${foundMemoryLimit}; cells without their own limit run under it`,
    );
  }
  return {
    services,
    sql,
    redis,
    cluster,
    toxiproxy,
    foundMemoryLimit,
    limitRecord,
    async close(interrupted) {
      await sql.end({ timeout: 2 });
      redis.disconnect();
      cluster?.disconnect();
      if (interrupted && startedServices.length > 0) {
        for (const line of await servicesDown({ log: () => {}, only: [...startedServices] })) log(line);
      }
    },
  };
}

/** On `--redis-cluster`, the strategies without tracking: node-redis's cluster client hands over no pushes. */
export function clusterStrategies(
  exp: Experiment,
  options: { name: string; redisCluster?: boolean },
  log: (line: string) => void,
): Experiment | string {
  if (!options.redisCluster || !exp.strategies.includes("tracking")) return exp;
  const strategies = exp.strategies.filter((strategy) => strategy !== "tracking");
  const why = "node-redis's cluster client hands over no invalidation pushes (no emitInvalidate)";
  if (strategies.length === 0) return `${options.name} cannot run tracking on a Redis Cluster: ${why}`;
  log(`skipped tracking on the Redis Cluster: ${why}`);
  return { ...exp, strategies };
}

/** The lab's own client of its cluster: the reset's SCANs and the figures read from every master. */
async function clusterClient(info: NonNullable<Services["redisCluster"]>): Promise<Cluster> {
  const cluster = new Cluster(
    info.nodes.map((node) => ({
      host: node.slice(0, node.lastIndexOf(":")),
      port: Number(node.slice(node.lastIndexOf(":") + 1)),
    })),
    {
      lazyConnect: true,
      redisOptions: { password: info.password, maxRetriesPerRequest: 1, commandTimeout: 5_000 },
    },
  );
  await cluster.connect();
  return cluster;
}

/**
 * The idle probe (lab/cell/idle_probe.ts) through the services any cell proxies, once, before the first
 * cell: its figures go to the rows (`run.context.base`) and the log, and every attack becomes what the run
 * sends over them (`run.exp` too). Returns the cells so resolved, or the one line that refuses the run (a
 * figure asked below the base): nothing has run yet.
 */
export async function measureRunBase(
  run: {
    exp: Experiment;
    run: RunServices;
    context: RowContext;
    seeded: { rows: number };
    log: (line: string) => void;
  },
  cellList: SettledCell[],
  gateway: string,
): Promise<SettledCell[] | string> {
  const proxied = (["postgres", "redis"] as const).filter((s) => cellList.some((c) => c.proxied.includes(s)));
  if (proxied.length === 0) return cellList;
  const apart = cellList.find((cell) => cell.proxied.length > 0)?.settings.apart === true;
  const base = await idleProbe(run.run.toxiproxy, run.run.services, proxied, {
    tag: `cachelab-${run.context.runId}-probe`,
    listenHost: apart ? gateway : "127.0.0.1",
    rows: run.seeded.rows,
  }).catch((error: Error) => `Cannot measure the lab's own base through Toxiproxy: ${error.message}`);
  if (typeof base === "string") return base;
  const added = addedOverBase(run.context.asked, base);
  if (typeof added === "string") return added;
  const figures = [
    base.missCostMs === null ? null : `miss cost ${base.missCostMs} ms (the server's detail query)`,
    base.redisRttMs === null ? null : `Redis round trip ${base.redisRttMs} ms (PING)`,
  ].filter((part) => part !== null);
  const adds = Object.entries(added).map(([service, ms]) => `${service} +${ms} ms a round trip`);
  run.log(
    `the lab's own, through Toxiproxy with nothing added (median of ${PROBE_SAMPLES}): ${figures.join(", ")}` +
      (adds.length > 0 ? `; Toxiproxy adds ${adds.join(", ")} for the figures asked` : ""),
  );
  run.context.base = base;
  // One resolved object per attack, so the cells that shared an attack still share it.
  const resolved = new Map<ExperimentAttack, ExperimentAttack>();
  const resolve = (attack: ExperimentAttack) => {
    const done = resolved.get(attack) ?? withAddedOverBase(attack, added);
    resolved.set(attack, done);
    return done;
  };
  run.exp = { ...run.exp, attacks: run.exp.attacks.map(resolve) };
  return cellList.map((cell) => ({ ...cell, attacks: cell.attacks.map(resolve) }));
}
