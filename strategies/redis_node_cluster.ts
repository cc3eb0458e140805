/**
 * redis_node_cluster: the commands redis.ts and two_tier.ts send, on a node-redis Redis Cluster
 * (`createCluster`).
 *
 * Give it a node-redis cluster (left open by the cache's close(); give its nodes a command timeout and no
 * offline queue, as failFastNodeClusterOptions does) or its nodes ("host:port") and password, from which it
 * creates one with those defaults and connects it: every command then fails within the timeout instead of
 * waiting for a node that is gone. two_tier's invalidations go by classic PUBLISH, which a cluster sends to
 * every node; its subscriber is one connection to one master, moved to another when that one goes.
 *
 *   const redis = nodeClusterCommands({ nodes: ["10.0.0.1:6379", "10.0.0.2:6379"], password });
 *   const cache = createCache({ redis, ttlMs: 60_000 });
 *
 * Copying this file? Needs redis@^6 (node-redis), and redis.ts beside it.
 */
import { createCluster } from "redis";

/** node-redis cluster settings for a cache: each command bounded, no offline queue on any node. */
export const failFastNodeClusterOptions = {
  commandOptions: { timeout: 100 },
  defaults: {
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 1_000,
      reconnectStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
    },
  },
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
type ScriptOptions = { keys: string[]; arguments: string[] };

/** What the subscriber uses of one node's node-redis client. */
interface NodeClient {
  readonly isOpen: boolean;
  duplicate(overrides: object): NodeClient;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>;
  on(event: "error" | "end", listener: () => void): unknown;
  destroy(): void;
}

/**
 * What these commands use of a node-redis cluster (`createCluster`'s result has it), spelled out: its own
 * generic type costs a type check many seconds.
 */
export interface NodeRedisCluster {
  readonly isOpen: boolean;
  readonly masters: { host: string; port: number }[];
  /** Each slot's shard, by slot number (empty before the first connection). */
  readonly slots: ({ master: { address: string } } | undefined)[];
  get(key: string): Promise<unknown>;
  eval(script: string, options: ScriptOptions): Promise<unknown>;
  evalSha(sha: string, options: ScriptOptions): Promise<unknown>;
  sendCommand(firstKey: undefined, isReadonly: boolean, args: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: a master as node-redis types it
  nodeClient(master: any): Promise<unknown>;
  on(event: "error" | "connect", listener: () => void): unknown;
  connect(): Promise<unknown>;
  destroy(): void;
}

/** The commands on a node-redis cluster, or on one of their own made from `nodes` and a password. */
export function nodeClusterCommands(
  cluster: NodeRedisCluster | { nodes: string[]; password?: string },
  options: { commandTimeoutMs?: number } = {},
) {
  const timeout = options.commandTimeoutMs ?? failFastNodeClusterOptions.commandOptions.timeout;
  const owned = "nodes" in cluster && Array.isArray(cluster.nodes);
  const client: NodeRedisCluster = owned
    ? (createCluster({
        rootNodes: (cluster as { nodes: string[] }).nodes.map((node) => ({ url: `redis://${node}` })),
        commandOptions: { timeout },
        defaults: {
          ...failFastNodeClusterOptions.defaults,
          password: (cluster as { password?: string }).password,
        },
      }) as unknown as NodeRedisCluster)
    : (cluster as NodeRedisCluster);
  if (owned) {
    client.on("error", () => {}); // errors surface as rejected commands, counted by the cache
    client.connect().catch(() => {});
  }
  // Before its first connection a node-redis cluster has no slot map: a command there throws, not rejects.
  const call = <T>(command: () => Promise<T>): Promise<T> => {
    try {
      return command();
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return {
    get: (key: string) => call(() => client.get(key)) as Promise<string | null>,
    // A script runs on the master of its first key's slot; redis.ts gives every script keys of one slot.
    eval: (lua: string, keys: string[], args: string[]) =>
      call(() => client.eval(lua, { keys, arguments: args })) as Promise<unknown>,
    evalsha: (sha: string, keys: string[], args: string[]) =>
      call(() => client.evalSha(sha, { keys, arguments: args })) as Promise<unknown>,
    ping: () => call(() => client.sendCommand(undefined, true, ["PING"])) as Promise<string>,
    // The master of the key's slot, as the client's slot map has it ("" before it has one).
    nodeOf: (redisKey: string) => client.slots[clusterSlot(redisKey)]?.master.address ?? "",
    publish: (channel: string, message: string) =>
      call(() => client.publish(channel, message)) as Promise<number>,
    /**
     * two_tier's subscriber: one connection to a master (a classic PUBLISH reaches every node), subscribed once
     * and never reconnected; when it closes, a new one to the next master, so each subscription is reported.
     */
    subscribe(channel: string, on: Subscriber) {
      let ended = false;
      let active = false;
      let turn = 0;
      let subscriber: NodeClient | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      function retryLater(): void {
        active = false;
        if (ended || timer !== undefined) return;
        timer = setTimeout(() => void start(), 100);
        timer.unref();
      }
      async function start(): Promise<void> {
        timer = undefined;
        const masters = client.isOpen ? client.masters : [];
        const master = masters[turn++ % Math.max(masters.length, 1)];
        if (ended || master === undefined) return retryLater(); // the cluster has not found its nodes yet
        let connection: NodeClient;
        try {
          const base = (await client.nodeClient(master)) as NodeClient;
          connection = base.duplicate({
            disableOfflineQueue: false,
            commandOptions: {},
            socket: { host: master.host, port: master.port, connectTimeout: 1_000, reconnectStrategy: false },
          });
        } catch {
          return retryLater();
        }
        subscriber = connection;
        connection.on("error", () => {});
        connection.on("end", retryLater);
        try {
          await connection.connect();
          await connection.subscribe(channel, (message) => on.message(message));
          if (ended) return void connection.destroy();
          on.subscribed();
          active = true;
        } catch {
          on.failed();
          if (connection.isOpen) connection.destroy();
          retryLater();
        }
      }
      void start();
      return {
        active: () => active,
        end: () => {
          ended = true;
          clearTimeout(timer);
          if (subscriber?.isOpen) subscriber.destroy();
        },
      };
    },
    end: () => {
      if (!owned) return;
      // Closed while its first connection is on the way: destroyed once it is open.
      if (client.isOpen) client.destroy();
      else client.on("connect", () => client.destroy());
    },
  };
}
