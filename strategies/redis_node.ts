/**
 * redis_node: the commands tracking.ts sends, and Redis's invalidation pushes, on a node-redis client over
 * RESP3 with CLIENT TRACKING on (`emitInvalidate`).
 *
 * Give it a client from trackingClient (left open by the cache's close()) or a URL, from which it creates
 * one. The client is fail-fast: no offline queue, every command raced against `commandTimeoutMs` (100;
 * node-redis's own timeout ends once a command is written), a reconnect within a second. `track()` hears
 * every key Redis pushes, and `null` when everything local must go: Redis flushed (FLUSHALL/FLUSHDB), or this
 * connection dropped, reconnected, or failed a command (a push sent meanwhile may be lost). A hung connection
 * is silent: a PING every `heartbeatMs` (1 000) finds it within one timeout.
 *
 *   const redis = nodeRedisCommands("redis://127.0.0.1:6379");
 *   const cache = createCache({ redis, ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *
 * Not on a cluster: node-redis 6.3's createCluster takes its own clientSideCache but no emitInvalidate, the
 * event tracking.ts's L1 is kept coherent by (redis.ts itself runs on a cluster: redis_node_cluster.ts).
 * Copying this file? Needs redis@^6, and tracking.ts with redis.ts beside it.
 */
import { createClient, ErrorReply } from "redis";

/** node-redis settings for a tracking cache: RESP3 pushes, and errors that become misses quickly. */
export const failFastNodeRedisOptions = {
  RESP: 3,
  emitInvalidate: true,
  disableOfflineQueue: true,
  maintNotifications: "disabled",
  commandTimeoutMs: 100,
  connectTimeoutMs: 1_000,
  heartbeatMs: 1_000,
  reconnectDelayMs: (retries: number) => Math.min((retries + 1) * 100, 1_000),
} as const;

/** What the adapter uses of a node-redis client (one from trackingClient, or the caller's own). */
export interface TrackingClient {
  sendCommand(args: string[]): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  readonly options?: { RESP?: number; emitInvalidate?: boolean };
  destroy(): void;
}

/** A node-redis client with tracking on and the fail-fast settings, connecting (errors become misses). */
export function trackingClient(url: string, options: { commandTimeoutMs?: number } = {}) {
  const o = failFastNodeRedisOptions;
  const client = createClient({
    url,
    RESP: o.RESP,
    emitInvalidate: o.emitInvalidate,
    disableOfflineQueue: o.disableOfflineQueue,
    maintNotifications: o.maintNotifications,
    commandOptions: { timeout: options.commandTimeoutMs ?? o.commandTimeoutMs },
    socket: { connectTimeout: o.connectTimeoutMs, reconnectStrategy: o.reconnectDelayMs },
  });
  client.on("error", () => {}); // connection errors surface as rejected commands, counted by the cache
  client.connect().catch(() => {});
  return client;
}

/** Cluster clients have no single connection to track: refused with the reason. */
function refuseCluster(client: object): void {
  if ("masters" in client || "slots" in client) {
    throw new TypeError(
      "Cannot track: a node-redis cluster carries no invalidate events (createCluster takes no emitInvalidate): received a cluster client",
    );
  }
}

/** The commands on `redis`, or on a client of their own made from a URL (closed by `end()`). */
export function nodeRedisCommands(
  redis: TrackingClient | string,
  options: { commandTimeoutMs?: number; heartbeatMs?: number } = {},
) {
  const owned = typeof redis === "string";
  if (typeof redis !== "string") refuseCluster(redis);
  const client: TrackingClient = typeof redis === "string" ? trackingClient(redis, options) : redis;
  const { RESP, emitInvalidate } = client.options ?? {};
  if (RESP !== 3 || emitInvalidate !== true) {
    throw new TypeError(
      `Cannot track: the client needs RESP: 3 and emitInvalidate: true: received RESP ${RESP}, emitInvalidate ${emitInvalidate}`,
    );
  }
  const timeoutMs = options.commandTimeoutMs ?? failFastNodeRedisOptions.commandTimeoutMs;
  let lost = () => {};
  // node-redis's own command timeout stops once a command is written: a hung Redis would hold it forever.
  function send(args: string[]): Promise<unknown> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Cannot run ${args[0]}: no reply within ${timeoutMs} ms: received none`)),
        timeoutMs,
      );
    });
    return Promise.race([client.sendCommand(args), timeout])
      .finally(() => clearTimeout(timer))
      .catch((error: unknown) => {
        // A failed command (not Redis's error reply, NOSCRIPT) may have met a dead or hung connection:
        // what Redis pushed on it may be lost.
        if (!(error instanceof ErrorReply)) lost();
        throw error;
      });
  }
  return {
    get: (key: string) => send(["GET", key]) as Promise<string | null>,
    eval: (lua: string, keys: string[], args: string[]) =>
      send(["EVAL", lua, String(keys.length), ...keys, ...args]),
    evalsha: (sha: string, keys: string[], args: string[]) =>
      send(["EVALSHA", sha, String(keys.length), ...keys, ...args]),
    ping: () => send(["PING"]) as Promise<string>,
    /** Calls `invalidate` with each key Redis pushes, and with null when everything local must go. */
    track(invalidate: (key: string | null) => void): { end(): void } {
      lost = () => invalidate(null);
      const pushed = (key: unknown) => invalidate(key === null ? null : String(key));
      const dropAll = () => invalidate(null);
      client.on("invalidate", pushed);
      // A new connection's tracking table is empty: nothing read on the old one is tracked any more.
      for (const event of ["error", "end", "ready"]) client.on(event, dropAll);
      const heartbeat = setInterval(() => {
        send(["PING"]).catch(() => {});
      }, options.heartbeatMs ?? failFastNodeRedisOptions.heartbeatMs);
      heartbeat.unref();
      return {
        end: () => {
          clearInterval(heartbeat);
          lost = () => {};
          client.off("invalidate", pushed);
          for (const event of ["error", "end", "ready"]) client.off(event, dropAll);
        },
      };
    },
    end: () => {
      if (owned) client.destroy();
    },
  };
}
