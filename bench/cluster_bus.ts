/**
 * two_tier's invalidation bus on the lab's three-master Redis Cluster: how long a message takes from its send to
 * the subscriber's handler, classic PUBLISH (a cluster forwards it to every node over its cluster bus) against
 * sharded SPUBLISH/SSUBSCRIBE (Redis 7: only the master of the channel's slot has it). Classic is timed with
 * the subscriber on the node the PUBLISH went to and on another (the forwarded case, which two_tier's
 * subscriber, on any master, mostly is); one message at a time, the three interleaved, ioredis with the
 * strategies' fail-fast settings. Baseline: a PING round trip to one node.
 *
 *   bun run bench:cluster-bus [--messages 2000]
 */
import { Cluster, type Redis } from "ioredis";
import { nearestRank } from "../lab/load/request_timeline.ts";
import { redisClusterUp } from "../lab/services/lifecycle.ts";
import { failFastClusterOptions, failFastRedisOptions } from "../strategies/redis_ioredis.ts";
import { benchArgs } from "./_args.ts";

const values = benchArgs("bun run bench:cluster-bus [--messages 2000]", {
  messages: { type: "string", default: "2000" },
});
const messages = Number(values.messages);
if (!(Number.isInteger(messages) && messages >= 100)) {
  console.error(`--messages must be an integer ≥ 100: received ${values.messages}`);
  process.exit(2);
}

const { nodes, password } = await redisClusterUp({ log: () => {} });
const cluster = new Cluster(
  nodes.map((node) => ({ host: "127.0.0.1", port: Number(node.split(":")[1]) })),
  { ...failFastClusterOptions, redisOptions: { ...failFastRedisOptions, commandTimeout: 1_000, password } },
);
await cluster.connect();
const channel = `cachelab:bench:cluster-bus:${crypto.randomUUID()}`;
const slot = Number(await cluster.call("CLUSTER", "KEYSLOT", channel));
const masters = cluster.nodes("master");
const address = (node: Redis) => `${node.options.host}:${node.options.port}`;
const owner = masters.find((node) => cluster.slots[slot]?.[0] === address(node)) as Redis;
const other = masters.find((node) => node !== owner) as Redis;
/** A connection of its own to `node`, for SUBSCRIBE or SSUBSCRIBE. */
async function connection(node: Redis): Promise<Redis> {
  const copy = node.duplicate({ lazyConnect: true, enableOfflineQueue: true, maxRetriesPerRequest: null });
  await copy.connect();
  return copy;
}
const [sameNode, otherNode, sharded] = await Promise.all([
  connection(owner),
  connection(other),
  connection(owner),
]);
let waiting: ((atMs: number) => void) | null = null;
const arrived = () => waiting?.(performance.now());
sameNode.on("message", arrived);
otherNode.on("message", arrived);
sharded.on("smessage", arrived);
await Promise.all([sameNode.subscribe(`${channel}:same`), otherNode.subscribe(`${channel}:other`)]);
await sharded.call("SSUBSCRIBE", channel);

/** ms from the send to the handler, one message. */
async function timed(send: () => Promise<unknown>): Promise<number> {
  const received = new Promise<number>((resolve) => {
    waiting = resolve;
  });
  const sentMs = performance.now();
  await send();
  return (await received) - sentMs;
}
const figures = { same: [] as number[], other: [] as number[], sharded: [] as number[], get: [] as number[] };
for (let i = 0; i < messages; i++) {
  const message = `instance key:${i}`;
  figures.same.push(await timed(() => owner.publish(`${channel}:same`, message)));
  figures.other.push(await timed(() => owner.publish(`${channel}:other`, message)));
  figures.sharded.push(await timed(() => owner.call("SPUBLISH", channel, message)));
  const getMs = performance.now();
  await owner.ping();
  figures.get.push(performance.now() - getMs);
  await Bun.sleep(1);
}
for (const list of Object.values(figures)) list.sort((a, b) => a - b);
const percentile = (list: number[], p: number) => nearestRank(list, p) as number;
const row = (name: string, list: number[]) =>
  `${name.padEnd(40)} ${[50, 99, 100].map((p) => percentile(list, p).toFixed(3).padStart(8)).join(" ")}`;
console.log(`${messages} messages each, ms:                      p50      p99      max`);
console.log(row("PUBLISH, subscriber on the same node", figures.same));
console.log(row("PUBLISH, subscriber on another node", figures.other));
console.log(row("SPUBLISH → SSUBSCRIBE (the slot's master)", figures.sharded));
console.log(row("PING round trip (baseline)", figures.get));
for (const connectionToEnd of [sameNode, otherNode, sharded]) connectionToEnd.disconnect();
cluster.disconnect();
