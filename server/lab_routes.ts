/**
 * The lab's routes beside the product: GET /stats and /info, POST /stats/window and /admin/reset (those two
 * behind the admin guard), and what they answer: the counters, what a server is, a fresh cache.
 */
import { cpus, hostname, release, totalmem } from "node:os";
import type { Elysia } from "elysia";
import type { ServerConfig, StrategyName } from "../server_config.ts";
import type { CacheStrategy } from "../strategies/_strategy.ts";
import { createAdminGuard } from "./admin_auth.ts";
import type { Database, RedisConnection } from "./clients.ts";
import type { SeedMeta } from "./identity.ts";
import type { Meter } from "./meter.ts";
import { escapeRedisGlob } from "./redis_glob.ts";

/** The settings GET /info reports: every one but where it listens and the URLs (which may hold passwords). */
const INFO_SETTINGS = [
  "pgDriver",
  "redisClient",
  "pgPoolMax",
  "pgQueueMax",
  "pgAcquireTimeoutMs",
  "pgStatementTimeoutMs",
  "maxEventLoopDelayMs",
  "cacheTtlMs",
  "l1TtlMs",
  "l1MaxEntries",
  "earlyRefreshBeta",
  "redisKeyPrefix",
] as const;

/**
 * What a server is (GET /info): its strategy and settings, the database and Redis it reads, and the machine
 * it runs on. A lab driving a server it did not start (`--server-url`) compares these with what each cell
 * needs, and its own database and Redis with the ones named here.
 */
export interface ServerInfo {
  instanceId: string;
  pid: number;
  startedAt: string;
  bunVersion: string;
  strategy: StrategyName;
  settings: Pick<ServerConfig, (typeof INFO_SETTINGS)[number]>;
  /** Postgres's cluster identifier (pg_control_system; null without the right to read it) and database. */
  database: { systemIdentifier: string | null; name: string } | null;
  /** The Redis server's run_id (INFO server); null for none and local, or when Redis does not answer. */
  redis: { runId: string } | null;
  /** The seed the products were generated from (cachelab_seed_meta): a simulation needs their categories. */
  seed: SeedMeta | null;
  machine: { hostname: string; cpuModel: string; cpuCount: number; memTotalGb: number; kernel: string };
}

function json(body: string): Response {
  return new Response(body, { headers: { "content-type": "application/json" } });
}

/** The lab's routes of one server, and what they call; `replaceCache` swaps in a fresh cache, returning the old. */
export function createLabRoutes(sources: {
  config: ServerConfig;
  database: Database;
  redis: RedisConnection | null;
  meter: Meter;
  replaceCache: () => CacheStrategy;
}) {
  const { config, database, redis, meter } = sources;
  const startedAt = new Date().toISOString();
  const adminRefusal = createAdminGuard({ token: config.adminToken, bindHost: config.host });

  async function info(): Promise<ServerInfo> {
    const [databaseIdentity, seed, redisRunId] = await Promise.all([
      database.identity().catch(() => null),
      database.seedMeta().catch(() => null),
      redis?.runId().catch(() => null) ?? null,
    ]);
    const cores = cpus();
    return {
      instanceId: meter.instanceId,
      pid: process.pid,
      startedAt,
      bunVersion: Bun.version,
      strategy: config.strategy,
      settings: Object.fromEntries(
        INFO_SETTINGS.map((name) => [name, config[name]]),
      ) as ServerInfo["settings"],
      database: databaseIdentity,
      seed,
      redis: redisRunId === null ? null : { runId: redisRunId },
      machine: {
        hostname: hostname(),
        cpuModel: cores[0]?.model.trim() ?? "unknown",
        cpuCount: cores.length,
        memTotalGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
        kernel: release(),
      },
    };
  }

  /**
   * What POST /admin/reset does, as a fresh process would start: a new cache for the strategy (empty, its
   * counters from 0) and the server's Redis keys (under REDIS_KEY_PREFIX) deleted. The database is not
   * touched. Meant for an idle server: requests in flight finish on the old cache.
   */
  async function reset(): Promise<{ redisKeysRemoved: number }> {
    const old = sources.replaceCache();
    meter.countReset();
    await old.close();
    const redisKeysRemoved = redis ? await redis.deleteKeys(`${escapeRedisGlob(config.redisKeyPrefix)}*`) : 0;
    return { redisKeysRemoved };
  }

  return {
    info,
    reset,
    /** Registers the routes on the server's app, where it `use`s this (an Elysia functional plugin). */
    routes: (app: Elysia) =>
      app
        .get("/stats", () => json(JSON.stringify(meter.stats())))
        .get("/info", async () => json(JSON.stringify(await info())))
        .post(
          "/admin/reset",
          async ({ request }) => adminRefusal(request) ?? json(JSON.stringify(await reset())),
        )
        .post("/stats/window", ({ request }) => {
          const refused = adminRefusal(request);
          if (refused !== null) return refused;
          return json(JSON.stringify(meter.window()));
        }),
  };
}
