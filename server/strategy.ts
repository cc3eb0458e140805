/**
 * The cache strategy CACHE_STRATEGY names, on the server's Redis client (REDIS_CLIENT's adapter; tracking's
 * on ioredis is redis_ioredis_tracking.ts's pair of connections), with the lab's counters wired to its `onEvent` (strategies/_counted.ts): /stats reports them.
 */
import type { RedisClient } from "bun";
import type { Cluster, Redis } from "ioredis";
import type { ServerConfig } from "../server_config.ts";
import { counted, countedLocal } from "../strategies/_counted.ts";
import type { CacheStrategy } from "../strategies/_strategy.ts";
import * as local from "../strategies/local.ts";
import * as none from "../strategies/none.ts";
import * as redisStrategy from "../strategies/redis.ts";
import { bunCommands } from "../strategies/redis_bun.ts";
import { ioredisClusterCommands, ioredisCommands } from "../strategies/redis_ioredis.ts";
import { ioredisTrackingCommands } from "../strategies/redis_ioredis_tracking.ts";
import { nodeRedisCommands } from "../strategies/redis_node.ts";
import { type NodeRedisCluster, nodeClusterCommands } from "../strategies/redis_node_cluster.ts";
import * as tracking from "../strategies/tracking.ts";
import * as twoTier from "../strategies/two_tier.ts";
import type { NodeRedisClient } from "./clients.ts";

/**
 * The strategy CACHE_STRATEGY names; `timeCommands` wraps its Redis adapter (server/tier_timer.ts times each
 * command the strategy sends).
 */
export function createStrategy(
  config: ServerConfig,
  redis: Redis | RedisClient | Cluster | NodeRedisCluster | NodeRedisClient | null,
  options: { timeCommands?: <C>(commands: C) => C } = {},
): CacheStrategy {
  const { timeCommands = <C>(commands: C) => commands } = options;
  const ttl = {
    ttlMs: config.cacheTtlMs,
    ...(config.earlyRefreshBeta > 0 ? { earlyRefresh: { beta: config.earlyRefreshBeta } } : {}),
  };
  // One adapter per strategy instance: a reset starts from a fresh one, as from a fresh strategy.
  const adapter = () => {
    if (config.redisClusterNodes !== null) {
      return config.redisClient === "node-redis"
        ? nodeClusterCommands(redis as NodeRedisCluster)
        : ioredisClusterCommands(redis as Cluster);
    }
    return config.redisClient === "bun" ? bunCommands(redis as RedisClient) : ioredisCommands(redis as Redis);
  };
  const commands = () => timeCommands(adapter());
  switch (config.strategy) {
    case "none":
      return none.createCache() satisfies CacheStrategy;
    case "local":
      return countedLocal((onEvent) => local.createCache({ maxSize: config.l1MaxEntries, ...ttl, onEvent }));
    case "redis":
      return counted((onEvent) =>
        redisStrategy.createCache({ redis: commands(), prefix: config.redisKeyPrefix, ...ttl, onEvent }),
      );
    case "two_tier":
      return counted((onEvent) =>
        twoTier.createCache({
          redis: commands(),
          prefix: config.redisKeyPrefix,
          ...ttl,
          l1MaxSize: config.l1MaxEntries,
          l1TtlMs: config.l1TtlMs,
          onEvent,
        }),
      );
    case "tracking":
      return counted((onEvent) =>
        tracking.createCache({
          redis: timeCommands(
            config.redisClient === "node-redis"
              ? nodeRedisCommands(redis as NodeRedisClient)
              : ioredisTrackingCommands(redis as Redis),
          ),
          prefix: config.redisKeyPrefix,
          ...ttl,
          l1MaxSize: config.l1MaxEntries,
          l1TtlMs: config.l1TtlMs,
          onEvent,
        }),
      );
  }
}
