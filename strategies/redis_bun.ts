/**
 * redis_bun: the commands redis.ts and two_tier.ts send, on Bun's built-in RedisClient, made fail-fast here.
 *
 * Give it a `RedisClient` (left open by the cache's close(); it gets the same handling whatever its options)
 * or a URL, from which it creates one with failFastBunOptions. With its defaults Bun's client makes a GET
 * wait ~31 s on a dead Redis; the code below bounds every command instead (each quirk is noted where it is
 * handled).
 *
 *   const cache = createCache({ redis: bunCommands("redis://127.0.0.1:6379"), ttlMs: 60_000 });
 *
 * Not for a Redis Cluster: Bun's client has no cluster support, and a command a node redirects (MOVED, ASK)
 * fails with that reason (a miss, as any error).
 *
 * Copying this file? Needs Bun ≥ 1.2.9 (two_tier.ts's pub/sub: 1.2.23; tested on 1.4.4), and redis.ts beside it.
 */
import { RedisClient } from "bun";

/** Bun's client settings: no offline queue, no reconnect loop (it reconnects on demand below), 1 s to connect. */
export const failFastBunOptions = {
  enableOfflineQueue: false,
  autoReconnect: false,
  connectionTimeout: 1_000,
};

/** Each command's bound (ioredis' commandTimeout), and how long unanswered commands mean a half-open socket. */
export const bunCommandDefaults = { commandTimeoutMs: 100, socketTimeoutMs: 5_000 };

/** A redirect means Redis is a cluster node: Bun's client has no cluster support, so say so instead. */
function clusterRefused(error: unknown): unknown {
  const message = String((error as Error)?.message ?? error);
  if (!/^(MOVED|ASK) /.test(message)) return error;
  return new Error(
    `Cannot use Bun's RedisClient on a Redis Cluster: it has no cluster support (no slot map, no MOVED or ASK redirects); use redis_ioredis.ts's ioredisClusterCommands or redis_node_cluster.ts: received ${message}`,
  );
}

/** The commands on `redis`, or on a client of their own made from a URL (closed by `end()`). */
export function bunCommands(redis: RedisClient | string, options: { commandTimeoutMs?: number } = {}) {
  const timeoutMs = options.commandTimeoutMs ?? bunCommandDefaults.commandTimeoutMs;
  const owned = typeof redis === "string";
  const client = typeof redis === "string" ? new RedisClient(redis, failFastBunOptions) : redis;
  let connecting: Promise<void> | undefined;
  // Since when commands have gone unanswered (none timed out since the last reply: undefined).
  let stalledSinceMs: number | undefined;
  // Bun's client rejects every command before its first connection when its offline queue is off, and stays
  // dead once its reconnect attempts are spent: connect() on demand, one at a time.
  function connect(): Promise<void> {
    connecting ??= client
      .connect()
      .then(() => {
        stalledSinceMs = undefined;
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  }
  // Bun's client has no command timeout and never notices a half-open connection: race each command.
  function bounded<T>(command: () => Promise<T>): Promise<T> {
    // Connected: sent in this tick. Otherwise sent once connected, in call order, or rejected with the connect.
    const sent = connecting !== undefined || !client.connected ? connect().then(command) : command();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const nowMs = performance.now();
        stalledSinceMs ??= nowMs - timeoutMs;
        // Nothing answered for socketTimeout while commands wait: a half-open connection, reopened on demand.
        if (nowMs - stalledSinceMs >= bunCommandDefaults.socketTimeoutMs && client.connected) client.close();
        reject(new Error(`Redis command timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      sent.then(
        (reply) => {
          clearTimeout(timer);
          stalledSinceMs = undefined;
          resolve(reply);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(clusterRefused(error));
        },
      );
    });
  }
  if (owned) connect().catch(() => {});
  const script = (command: string, hash: string, keys: string[], args: string[]): Promise<unknown> =>
    bounded(() => client.send(command, [hash, String(keys.length), ...keys, ...args]));
  return {
    get: (key: string) => bounded(() => client.get(key)),
    eval: (lua: string, keys: string[], args: string[]) => script("EVAL", lua, keys, args),
    evalsha: (sha: string, keys: string[], args: string[]) => script("EVALSHA", sha, keys, args),
    ping: () => bounded(() => client.ping()),
    publish: (channel: string, message: string) => bounded(() => client.publish(channel, message)),
    /** two_tier's subscriber: a duplicate connection, reconnected on a timer (100 ms × attempt, ≤ 1 s). */
    subscribe(channel: string, on: { message(text: string): void; subscribed(): void; failed(): void }) {
      let subscriber: RedisClient | undefined;
      let active = false;
      let subscribedOnce = false;
      let ended = false;
      let attempts = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const listener = (message: string) => on.message(message);
      // Bun restores no subscription after a reconnect, yet keeps its listener (a new SUBSCRIBE would call it
      // twice per message): drop it, then subscribe again.
      async function resubscribe(connection: RedisClient): Promise<void> {
        try {
          if (subscribedOnce) await connection.unsubscribe(channel).catch(() => {});
          await connection.subscribe(channel, listener);
          subscribedOnce = true;
          attempts = 0;
          on.subscribed();
          active = true;
        } catch {
          on.failed();
        }
      }
      function retryLater(): void {
        active = false;
        if (ended || timer !== undefined) return;
        timer = setTimeout(start, Math.min(++attempts * 100, 1_000));
        timer.unref();
      }
      function start(): void {
        timer = undefined;
        if (ended) return;
        if (subscriber !== undefined) {
          subscriber.connect().catch(retryLater); // its onconnect subscribes
          return;
        }
        client.duplicate().then((connection) => {
          if (ended) return connection.close();
          subscriber = connection;
          connection.onconnect = () => void resubscribe(connection);
          connection.onclose = retryLater;
          if (connection.connected) void resubscribe(connection);
          else connection.connect().catch(retryLater);
        }, retryLater);
      }
      start();
      return {
        active: () => active && subscriber?.connected === true,
        end: () => {
          ended = true;
          clearTimeout(timer);
          subscriber?.close();
        },
      };
    },
    end: () => {
      if (owned) client.close();
    },
  };
}
