/**
 * The strategy contract (strategies/_contract.ts) for tracking against Valkey: this repo's tracking on
 * node-redis over RESP3, on the lab's valkey-server beside its Redis (install-deps.sh's pin), kept coherent by
 * Valkey's CLIENT TRACKING invalidation pushes; faults through a Toxiproxy of this file's own in front of it.
 * The quick set's Valkey pass (seconds); redis and two_tier on Valkey are valkey_test.ts (the full set). A
 * machine without valkey-server fails here; it never skips.
 */
import { afterAll } from "bun:test";
import { startToxiproxy, type ToxiproxyServer } from "../lab/faults/toxiproxy.ts";
import { testValkeyUrl } from "../lab/shared/testing.ts";
import { type FaultProxies, strategyContract } from "./_contract.ts";
import * as local from "./local.ts";
import * as none from "./none.ts";
import * as redis from "./redis.ts";
import * as bun from "./redis_bun.ts";
import * as ioredis from "./redis_ioredis.ts";
import * as ioredisTracking from "./redis_ioredis_tracking.ts";
import * as node from "./redis_node.ts";
import * as nodeCluster from "./redis_node_cluster.ts";
import * as tracking from "./tracking.ts";
import * as twoTier from "./two_tier.ts";

let toxiproxy: Promise<ToxiproxyServer> | undefined;
/** Started on the first fault test. */
async function faults(): Promise<FaultProxies> {
  toxiproxy ??= startToxiproxy();
  return (await toxiproxy).client;
}
afterAll(async () => {
  await (await toxiproxy)?.stop();
});

const inRepo = { ioredis, bun, nodeCluster };
const repo = {
  none,
  local,
  redis,
  two_tier: twoTier,
  tracking,
  adapters: { redis: inRepo, two_tier: inRepo, tracking: { ioredis: ioredisTracking, node } },
};
strategyContract("repo on Valkey, node-redis", repo, testValkeyUrl, faults, "node-redis");
