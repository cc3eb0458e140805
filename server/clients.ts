/**
 * The server's clients, as PG_DRIVER and REDIS_CLIENT choose: postgres.js or Bun.SQL under drizzle, and
 * ioredis or Bun's RedisClient for redis and two_tier (on a Redis Cluster: server/redis_cluster.ts; node-redis
 * over RESP3 for tracking, whatever REDIS_CLIENT says), each with what /info and /stats report of it.
 */
import { RedisClient, SQL } from "bun";
import { drizzle as drizzleBunSql } from "drizzle-orm/bun-sql";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import { Redis } from "ioredis";
import ioredisPackage from "ioredis/package.json" with { type: "json" };
import postgres from "postgres";
import nodeRedisPackage from "redis/package.json" with { type: "json" };
import type { ServerConfig } from "../server_config.ts";
import { breakerDefaults } from "../strategies/redis.ts";
import { bunCommandDefaults, failFastBunOptions } from "../strategies/redis_bun.ts";
import { failFastRedisOptions } from "../strategies/redis_ioredis.ts";
import { failFastNodeRedisOptions, trackingClient } from "../strategies/redis_node.ts";
import { deleteKeys } from "./delete_keys.ts";
import { IDENTITY_QUERY, identityOf, runIdOf, SEED_QUERY, type SeedMeta, seedOf } from "./identity.ts";
import { openRedisCluster } from "./redis_cluster.ts";
import type { RedisConnection } from "./redis_connection.ts";

export type { NodeRedisClient, RedisConnection } from "./redis_connection.ts";

/** The handlers' Postgres client under drizzle, whichever driver PG_DRIVER chose. */
export interface Database {
  db: PgDatabase<PgQueryResultHKT>;
  ping(): Promise<unknown>;
  /** The cluster's system identifier (null without the right to read pg_control_system) and the database. */
  identity(): Promise<{ systemIdentifier: string | null; name: string }>;
  /** The rows the lab seeded (cachelab_seed_meta), or null when the table is not there. */
  seedMeta(): Promise<SeedMeta | null>;
  end(): Promise<void>;
}

/**
 * postgres.js (the default: drizzle's named prepared statements, pipelining on each connection) or Bun.SQL
 * (`prepare: true`: Bun prepares each statement on each connection itself; drizzle's bun-sql driver ignores
 * statement names). Both get the same pool size and application name.
 */
export function openDatabase(config: ServerConfig): Database {
  const applicationName = `cachelab-${config.strategy}`;
  // A startup parameter, so every pooled connection has it from its first statement; 0 leaves Postgres's own.
  const connection = {
    application_name: applicationName,
    ...(config.pgStatementTimeoutMs > 0 ? { statement_timeout: config.pgStatementTimeoutMs } : {}),
  };
  if (config.pgDriver === "bun-sql") {
    const client = new SQL({
      url: config.databaseUrl,
      max: config.pgPoolMax,
      prepare: true,
      connection,
    });
    return {
      db: drizzleBunSql({ client }) as unknown as PgDatabase<PgQueryResultHKT>,
      ping: () => client`select 1`,
      identity: async () => identityOf(await client.unsafe(IDENTITY_QUERY)),
      seedMeta: async () => seedOf(await client.unsafe(SEED_QUERY)),
      end: () => client.close({ timeout: 5 }),
    };
  }
  const pg = postgres(config.databaseUrl, {
    max: config.pgPoolMax,
    onnotice: () => {},
    connection,
  });
  return {
    db: drizzle({ client: pg }) as unknown as PgDatabase<PgQueryResultHKT>,
    ping: () => pg`select 1`,
    identity: async () => identityOf(await pg.unsafe(IDENTITY_QUERY)),
    seedMeta: async () => seedOf(await pg.unsafe(SEED_QUERY)),
    end: () => pg.end({ timeout: 5 }),
  };
}

/** HELLO's fields, from a RESP3 map (Bun) or a flat list of name, value pairs (ioredis). */
function helloFields(reply: unknown): Record<string, unknown> {
  if (!Array.isArray(reply)) return typeof reply === "object" && reply !== null ? { ...reply } : {};
  const fields: Record<string, unknown> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) fields[String(reply[i])] = reply[i + 1];
  return fields;
}

/**
 * The Redis client of the Redis strategies (REDIS_CLIENT; tracking's on ioredis has a subscriber of its own
 * beside it, redis_ioredis_tracking.ts), fail-fast, connecting; null for none and local.
 */
export function openRedis(config: ServerConfig): RedisConnection | null {
  if (config.strategy === "none" || config.strategy === "local") return null;
  // tracking on a cluster is refused by readConfig (server_config.ts).
  if (config.redisClusterNodes !== null) return openRedisCluster(config, config.redisClusterNodes);
  // What Redis said, asked again on every connection (a reconnect may reach another server).
  let negotiated = "resp=unknown(not connected yet)";
  const heard = (reply: unknown) => {
    const fields = helloFields(reply);
    // HELLO's `server` names it (`redis`, `valkey`), and `version` is that server's own.
    negotiated = `resp${fields.proto} ${fields.server ?? "redis"}=${fields.version}`;
  };
  const { threshold, cooldownMs } = breakerDefaults;
  const breaker = `breaker=${threshold}failures/${cooldownMs}ms`;
  if (config.strategy === "tracking" && config.redisClient === "node-redis")
    return openNodeRedis(config.redisUrl, heard, breaker, () => negotiated);
  if (config.redisClient === "bun") {
    const options = failFastBunOptions;
    const client = new RedisClient(config.redisUrl, options);
    client.onconnect = () => {
      client.send("HELLO", []).then(heard, () => {});
    };
    client.connect().catch(() => {}); // a down Redis shows as cache errors and in /ready
    const settings = [
      "autopipelining=on", // Bun's default, not overridden
      `commandTimeout=${bunCommandDefaults.commandTimeoutMs}ms(raced)`,
      `offlineQueue=${options.enableOfflineQueue ? "on" : "off"}`,
      `autoReconnect=${options.autoReconnect ? "on" : "off(on demand)"}`,
      `connectTimeout=${options.connectionTimeout}ms`,
      breaker,
    ].join(" ");
    const send = (command: string, args: string[]) => client.send(command, args);
    return {
      client,
      describe: () => `bun ${Bun.version} RedisClient ${negotiated} ${settings}`,
      runId: async () => runIdOf(await send("INFO", ["server"])),
      deleteKeys: (pattern) => deleteKeys(send, pattern),
      close: () => client.close(),
    };
  }
  const client = new Redis(config.redisUrl, failFastRedisOptions);
  client.on("error", () => {}); // a down Redis shows as cache errors and in /ready, not as log spam
  client.on("ready", () => {
    client.call("HELLO").then(heard, () => {});
  });
  client.connect().catch(() => {});
  const o = client.options;
  const settings = [
    ...(config.strategy === "tracking" ? ["tracking=on(redirect to a RESP2 subscriber)"] : []),
    `autopipelining=${o.enableAutoPipelining ? "on" : "off"}`,
    `commandTimeout=${o.commandTimeout}ms`,
    `offlineQueue=${o.enableOfflineQueue ? "on" : "off"}`,
    `retriesPerRequest=${o.maxRetriesPerRequest}`,
    breaker,
  ].join(" ");
  const send = (command: string, args: string[]) => client.call(command, ...args);
  return {
    client,
    describe: () => `ioredis ${ioredisPackage.version} ${negotiated} ${settings}`,
    runId: async () => runIdOf(await send("INFO", ["server"])),
    deleteKeys: (pattern) => deleteKeys(send, pattern),
    close: () => client.disconnect(),
  };
}

/** tracking's node-redis client: RESP3 with CLIENT TRACKING on, and what /info reports of it. */
function openNodeRedis(
  url: string,
  heard: (reply: unknown) => void,
  breaker: string,
  negotiated: () => string,
): RedisConnection {
  const client = trackingClient(url);
  client.on("ready", () => {
    client.sendCommand(["HELLO"]).then(heard, () => {});
  });
  const o = failFastNodeRedisOptions;
  const settings = [
    "tracking=on(default mode)",
    `commandTimeout=${o.commandTimeoutMs}ms(raced)`,
    `offlineQueue=${o.disableOfflineQueue ? "off" : "on"}`,
    `heartbeat=${o.heartbeatMs}ms`,
    breaker,
  ].join(" ");
  const send = (command: string, args: string[]) => client.sendCommand([command, ...args]);
  return {
    client,
    describe: () => `node-redis ${nodeRedisPackage.version} ${negotiated()} ${settings}`,
    runId: async () => runIdOf(await send("INFO", ["server"])),
    deleteKeys: (pattern) => deleteKeys(send, pattern),
    close: () => client.destroy(),
  };
}
