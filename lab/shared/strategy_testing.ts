/**
 * What the strategy contract's test files share (strategies/strategies_test.ts, valkey_test.ts,
 * valkey_tracking_test.ts): this repo's strategy modules with every adapter, and a Toxiproxy of the file's own
 * for the fault tests, started on the first one and stopped after the file.
 */
import { afterAll } from "bun:test";
import type { FaultProxies, StrategyModules } from "../../strategies/_contract.ts";
import * as local from "../../strategies/local.ts";
import * as none from "../../strategies/none.ts";
import * as redis from "../../strategies/redis.ts";
import * as bun from "../../strategies/redis_bun.ts";
import * as ioredis from "../../strategies/redis_ioredis.ts";
import * as ioredisTracking from "../../strategies/redis_ioredis_tracking.ts";
import * as node from "../../strategies/redis_node.ts";
import * as nodeCluster from "../../strategies/redis_node_cluster.ts";
import * as tracking from "../../strategies/tracking.ts";
import * as twoTier from "../../strategies/two_tier.ts";
import { startToxiproxy, type ToxiproxyServer } from "../faults/toxiproxy.ts";

const inRepo = { ioredis, bun, nodeCluster };

/** This repo's strategies, each Redis one with every adapter it has. */
export const repoStrategies: StrategyModules = {
  none,
  local,
  redis,
  two_tier: twoTier,
  tracking,
  adapters: { redis: inRepo, two_tier: inRepo, tracking: { ioredis: ioredisTracking, node } },
};

/** The calling test file's fault proxies: a Toxiproxy started on first use, stopped after the file. */
export function ownFaults(): () => Promise<FaultProxies> {
  let toxiproxy: Promise<ToxiproxyServer> | undefined;
  afterAll(async () => {
    await (await toxiproxy)?.stop();
  });
  return async () => {
    toxiproxy ??= startToxiproxy();
    return (await toxiproxy).client;
  };
}
