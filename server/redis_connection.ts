/**
 * What the server asks of its Redis client beside the cache, whichever client it is: a file of its own so
 * that clients.ts and redis_cluster.ts, which both make one, need not import each other.
 */
import type { RedisClient } from "bun";
import type { Cluster, Redis } from "ioredis";
import type { trackingClient } from "../strategies/redis_node.ts";
import type { NodeRedisCluster } from "../strategies/redis_node_cluster.ts";

/** A node-redis client with tracking on (tracking's). */
export type NodeRedisClient = ReturnType<typeof trackingClient>;

/** The Redis client of redis, two_tier or tracking, and what the server asks of it beside the cache. */
export interface RedisConnection {
  client: Redis | RedisClient | Cluster | NodeRedisCluster | NodeRedisClient;
  describe(): string;
  /** INFO server's run_id: which Redis process this is (a cluster: its masters', sorted, comma-separated). */
  runId(): Promise<string>;
  /** Deletes the keys matching `pattern` (SCAN + UNLINK, never KEYS or FLUSHALL); how many went. */
  deleteKeys(pattern: string): Promise<number>;
  close(): void;
}
