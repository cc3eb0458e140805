/**
 * redis_ioredis: the commands redis.ts and two_tier.ts send, on an ioredis client or an ioredis Cluster.
 *
 * Give it an ioredis `Redis` (left open by the cache's close(); give it a `commandTimeout`, as
 * failFastRedisOptions does) or a URL, from which it creates one with failFastRedisOptions: every command
 * then fails within `commandTimeout` instead of waiting in ioredis' offline queue (10–73 s when Redis is down).
 * On a Redis Cluster: `ioredisClusterCommands` with an ioredis `Cluster` or its nodes and password (then a
 * Cluster of its own, fail-fast the same way). two_tier's invalidations go by classic PUBLISH, which a cluster
 * sends to every node; its subscriber is one connection to one master, moved to another when that one goes.
 *
 *   const cache = createCache({ redis: ioredisCommands("redis://127.0.0.1:6379"), ttlMs: 60_000 });
 *   const onCluster = ioredisClusterCommands({ nodes: ["10.0.0.1:6379", "10.0.0.2:6379"], password });
 *
 * Copying this file? Needs ioredis@^6, and redis.ts beside it (a cluster needs nothing more).
 */
import { Cluster, Redis } from "ioredis";

/** ioredis settings for a cache: errors become misses quickly instead of waiting in its offline queue. */
export const failFastRedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 100,
  connectTimeout: 1_000,
  socketTimeout: 5_000,
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
  lazyConnect: true,
};

/** redis.ts's commands and two_tier's PUBLISH, the same on one Redis and on a Cluster. */
function commandsOf(client: Redis | Cluster) {
  return {
    get: (key: string) => client.get(key),
    eval: (lua: string, keys: string[], args: string[]) => client.eval(lua, keys.length, ...keys, ...args),
    evalsha: (sha: string, keys: string[], args: string[]) =>
      client.evalsha(sha, keys.length, ...keys, ...args),
    ping: () => client.ping(),
    publish: (channel: string, message: string) => client.publish(channel, message),
  };
}

/** The commands on `redis`, or on a client of their own made from a URL (closed by `end()`). */
export function ioredisCommands(redis: Redis | string, options: { commandTimeoutMs?: number } = {}) {
  const commandTimeout = options.commandTimeoutMs ?? failFastRedisOptions.commandTimeout;
  const owned = typeof redis === "string";
  const client =
    typeof redis === "string" ? new Redis(redis, { ...failFastRedisOptions, commandTimeout }) : redis;
  if (owned) {
    client.on("error", () => {}); // connection errors surface as rejected commands, counted by the cache
    client.connect().catch(() => {});
  }
  return {
    ...commandsOf(client),
    /** two_tier's subscriber: a duplicate that queues its SUBSCRIBE until connected and never stops reconnecting. */
    subscribe(channel: string, on: { message(text: string): void; subscribed(): void; failed(): void }) {
      const subscriber = client.duplicate({
        lazyConnect: false,
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        autoResubscribe: false, // subscribed again below, on every "ready", to tell two_tier when
      });
      let active = false;
      subscriber.on("error", () => {});
      subscriber.on("ready", () => {
        subscriber.subscribe(channel).then(() => {
          on.subscribed();
          active = true;
        }, on.failed);
      });
      subscriber.on("close", () => {
        active = false;
      });
      subscriber.on("message", (_channel: string, message: string) => on.message(message));
      return { active: () => active, end: () => subscriber.disconnect() };
    },
    end: () => {
      if (owned) client.disconnect();
    },
  };
}

/** ioredis Cluster settings for a cache: no offline queue, each node's commands bounded as failFastRedisOptions. */
export const failFastClusterOptions = {
  enableOfflineQueue: false,
  lazyConnect: true,
  clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
};

/** Redis Cluster's hash slot of a key: CRC16 (XMODEM) of its hash tag, else of the whole key, mod 16 384. */
export function clusterSlot(key: string): number {
  const open = key.indexOf("{");
  const close = open === -1 ? -1 : key.indexOf("}", open + 1);
  let crc = 0;
  for (const byte of Buffer.from(close > open + 1 ? key.slice(open + 1, close) : key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16_384;
}

type Subscriber = { message(text: string): void; subscribed(): void; failed(): void };

/** The commands on an ioredis `Cluster`, or on one of their own made from `nodes` ("host:port") and a password. */
export function ioredisClusterCommands(
  cluster: Cluster | { nodes: string[]; password?: string },
  options: { commandTimeoutMs?: number } = {},
) {
  const commandTimeout = options.commandTimeoutMs ?? failFastRedisOptions.commandTimeout;
  // A Cluster's `nodes` is a method: an array is a list of nodes (instanceof fails across copies of ioredis).
  const owned = Array.isArray(cluster.nodes);
  const client = !owned
    ? (cluster as Cluster)
    : new Cluster(
        (cluster.nodes as string[]).map((node) => ({
          host: node.slice(0, node.lastIndexOf(":")),
          port: Number(node.slice(node.lastIndexOf(":") + 1)),
        })),
        {
          ...failFastClusterOptions,
          redisOptions: {
            ...failFastRedisOptions,
            commandTimeout,
            password: (cluster as { password?: string }).password,
          },
        },
      );
  if (owned) {
    client.on("error", () => {}); // errors surface as rejected commands, counted by the cache
    client.connect().catch(() => {});
  }
  return {
    // A script runs on the master of its first key's slot; redis.ts gives every script keys of one slot.
    ...commandsOf(client),
    // The master of the key's slot, as the client's slot map has it ("" before it has one).
    nodeOf: (redisKey: string) => client.slots[clusterSlot(redisKey)]?.[0] ?? "",
    /**
     * two_tier's subscriber: one connection to a master (a classic PUBLISH reaches every node), subscribed once;
     * when it closes, a new one to the next master, so each subscription is reported to two_tier.
     */
    subscribe(channel: string, on: Subscriber) {
      let ended = false;
      let active = false;
      let turn = 0;
      let subscriber: Redis | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      function retryLater(): void {
        active = false;
        if (ended || timer !== undefined) return;
        timer = setTimeout(start, 100);
        timer.unref();
      }
      function start(): void {
        timer = undefined;
        const masters = client.nodes("master");
        const node = masters[turn++ % Math.max(masters.length, 1)];
        if (ended || node === undefined) {
          retryLater(); // the cluster has not found its nodes yet
          return;
        }
        const connection = node.duplicate({
          lazyConnect: false,
          enableOfflineQueue: true,
          maxRetriesPerRequest: null,
          autoResubscribe: false,
          retryStrategy: () => null, // no reconnect to this node: the next attempt picks a master again
        });
        subscriber = connection;
        connection.on("error", () => {});
        connection.on("ready", () => {
          connection.subscribe(channel).then(() => {
            on.subscribed();
            active = true;
          }, on.failed);
        });
        connection.on("message", (_channel: string, message: string) => on.message(message));
        connection.once("end", retryLater);
      }
      start();
      return {
        active: () => active,
        end: () => {
          ended = true;
          clearTimeout(timer);
          subscriber?.disconnect();
        },
      };
    },
    end: () => {
      if (owned) client.disconnect();
    },
  };
}
