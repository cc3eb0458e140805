/**
 * two_tier's and tracking's staleness bounds on this machine: how long a Redis pub/sub invalidation takes from
 * PUBLISH to the subscriber's message handler (ioredis, two_tier's client settings), and how long Redis's own
 * invalidation takes from a SET of a tracked key to the `invalidate` push on the connection that read it
 * (node-redis over RESP3, tracking's settings), one message at a time, interleaved. Baseline in the same run:
 * a GET round trip on the publisher's connection (the least any Redis message can take), so the ratios say
 * what each bus adds. scale_out's staleness figures for two_tier and tracking are read against these.
 *
 *   bun run bench:bus-delay [--messages 2000]
 */
import { Redis } from "ioredis";
import { nearestRank } from "../lab/load/request_timeline.ts";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { failFastRedisOptions } from "../strategies/redis_ioredis.ts";
import { trackingClient } from "../strategies/redis_node.ts";
import { benchArgs } from "./_args.ts";

const values = benchArgs("bun run bench:bus-delay [--messages 2000]", {
  messages: { type: "string", default: "2000" },
});
const messages = Number(values.messages);
if (!(Number.isInteger(messages) && messages >= 100)) {
  console.error(`--messages must be an integer ≥ 100: received ${values.messages}`);
  process.exit(2);
}

const services = await servicesUp({ log: () => {} });
const publisher = new Redis(services.redisUrl, failFastRedisOptions);
const subscriber = new Redis(services.redisUrl, failFastRedisOptions);
await Promise.all([publisher.connect(), subscriber.connect()]);
const channel = `cachelab:bench:bus:${crypto.randomUUID()}`;
let waiting: ((atMs: number) => void) | null = null;
subscriber.on("message", () => waiting?.(performance.now()));
await subscriber.subscribe(channel);
const tracked = trackingClient(services.redisUrl);
while (!tracked.isReady) await Bun.sleep(5);
const trackedKey = `${channel}:tracked`;
let pushWaiting: ((atMs: number) => void) | null = null;
tracked.on("invalidate", () => pushWaiting?.(performance.now()));

const bus: number[] = [];
const push: number[] = [];
const roundTrip: number[] = [];
// Interleaved, one at a time: the same moments of the machine for both.
for (let i = 0; i < messages; i++) {
  const received = new Promise<number>((resolve) => {
    waiting = resolve;
  });
  const sentMs = performance.now();
  await publisher.publish(channel, `instance key:${i}`);
  bus.push((await received) - sentMs);
  await tracked.sendCommand(["GET", trackedKey]); // Redis tracks the key for this connection
  const pushed = new Promise<number>((resolve) => {
    pushWaiting = resolve;
  });
  const setMs = performance.now();
  await publisher.set(trackedKey, String(i));
  push.push((await pushed) - setMs);
  const getMs = performance.now();
  await publisher.get("cachelab:bench:bus:absent");
  roundTrip.push(performance.now() - getMs);
  await Bun.sleep(1);
}
for (const list of [bus, push, roundTrip]) list.sort((a, b) => a - b);
const percentile = (list: number[], p: number) => nearestRank(list, p) as number;
const row = (name: string, list: number[]) =>
  `${name.padEnd(26)} ${[50, 99, 100].map((p) => percentile(list, p).toFixed(3).padStart(8)).join(" ")}`;
console.log(`${messages} messages, ms:              p50      p99      max`);
console.log(row("PUBLISH → message handler", bus));
console.log(row("SET → invalidate push", push));
console.log(row("GET round trip (baseline)", roundTrip));
const vsRoundTrip = (list: number[]) => (percentile(list, 50) / percentile(roundTrip, 50)).toFixed(2);
console.log(`bus ÷ round trip (p50): ${vsRoundTrip(bus)}; push ÷ round trip (p50): ${vsRoundTrip(push)}`);
await publisher.del(trackedKey);
publisher.disconnect();
subscriber.disconnect();
tracked.destroy();
