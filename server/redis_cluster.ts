/**
 * The server's Redis Cluster client (REDIS_CLUSTER_NODES): an ioredis Cluster, or node-redis's with
 * REDIS_CLIENT=node-redis, fail-fast as the strategies' adapters make their own; what /info and /stats report
 * of it; and the reset, which SCANs every master (a SCAN sees one node's keys) and UNLINKs key by key (one
 * command may name keys of one slot only).
 */
import { Cluster } from "ioredis";
import ioredisPackage from "ioredis/package.json" with { type: "json" };
import { createCluster } from "redis";
import redisPackage from "redis/package.json" with { type: "json" };
import type { ServerConfig } from "../server_config.ts";
import { breakerDefaults } from "../strategies/redis.ts";
import { failFastClusterOptions, failFastRedisOptions } from "../strategies/redis_ioredis.ts";
import { failFastNodeClusterOptions, type NodeRedisCluster } from "../strategies/redis_node_cluster.ts";
import { deleteKeys } from "./delete_keys.ts";
import { runIdOf } from "./identity.ts";
import type { RedisConnection } from "./redis_connection.ts";

type Send = (command: string, args: string[]) => Promise<unknown>;

/** A master's `send`, with UNLINK split into one command per key: keys of several slots in one are refused. */
function perKey(send: Send): Send {
  return async (command, args) => {
    if (command !== "UNLINK") return send(command, args);
    const removed = await Promise.all(args.map((key) => send("UNLINK", [key])));
    return removed.reduce((sum: number, count) => sum + Number(count), 0);
  };
}

/** The masters' keys matching `pattern`, deleted master by master; how many went. */
async function deleteOnMasters(masters: Send[], pattern: string): Promise<number> {
  const counts = await Promise.all(masters.map((send) => deleteKeys(perKey(send), pattern)));
  return counts.reduce((sum, count) => sum + count, 0);
}

/** The run_ids of the masters, sorted and joined: which Redis processes serve the cluster now. */
async function runIds(masters: Send[]): Promise<string> {
  const ids = await Promise.all(masters.map(async (send) => runIdOf(await send("INFO", ["server"]))));
  return ids.sort().join(",");
}

/** The cluster's client of redis and two_tier (REDIS_CLIENT: ioredis or node-redis), connecting. */
export function openRedisCluster(config: ServerConfig, nodes: string[]): RedisConnection {
  const password = config.redisClusterPassword ?? undefined;
  const { threshold, cooldownMs } = breakerDefaults;
  const breaker = `breaker=${threshold}failures/${cooldownMs}ms`;
  if (config.redisClient === "node-redis") {
    const client = createCluster({
      rootNodes: nodes.map((node) => ({ url: `redis://${node}` })),
      commandOptions: failFastNodeClusterOptions.commandOptions,
      defaults: { ...failFastNodeClusterOptions.defaults, password },
    });
    client.on("error", () => {}); // a node down shows as cache errors and in /ready, not as log spam
    client.connect().catch(() => {});
    const masters = async (): Promise<Send[]> =>
      Promise.all(
        client.masters.map(async (master) => {
          const node = await client.nodeClient(master);
          return (command: string, args: string[]) => node.sendCommand([command, ...args]);
        }),
      );
    const settings = [
      `commandTimeout=${failFastNodeClusterOptions.commandOptions.timeout}ms`,
      "offlineQueue=off",
      breaker,
    ].join(" ");
    return {
      client: client as unknown as NodeRedisCluster,
      describe: () =>
        `node-redis ${redisPackage.version} cluster masters=${client.masters.length} ${settings}`,
      runId: async () => runIds(await masters()),
      deleteKeys: async (pattern) => deleteOnMasters(await masters(), pattern),
      close: () => {
        if (client.isOpen) client.destroy();
      },
    };
  }
  const client = new Cluster(
    nodes.map((node) => ({
      host: node.slice(0, node.lastIndexOf(":")),
      port: Number(node.slice(node.lastIndexOf(":") + 1)),
    })),
    { ...failFastClusterOptions, redisOptions: { ...failFastRedisOptions, password } },
  );
  client.on("error", () => {});
  client.connect().catch(() => {});
  const masters = (): Send[] =>
    client.nodes("master").map((node) => (command: string, args: string[]) => node.call(command, ...args));
  const settings = [
    `commandTimeout=${failFastRedisOptions.commandTimeout}ms`,
    "offlineQueue=off",
    `retriesPerRequest=${failFastRedisOptions.maxRetriesPerRequest}`,
    breaker,
  ].join(" ");
  return {
    client,
    describe: () =>
      `ioredis ${ioredisPackage.version} Cluster masters=${client.nodes("master").length} ${settings}`,
    runId: () => runIds(masters()),
    deleteKeys: (pattern) => deleteOnMasters(masters(), pattern),
    close: () => client.disconnect(),
  };
}
