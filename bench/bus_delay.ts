/**
 * two_tier's staleness bound on this machine: how long a Redis pub/sub invalidation takes from PUBLISH to the
 * subscriber's message handler, with ioredis and the strategy's own client settings, one message at a time.
 * Baseline in the same run: a GET round trip on the same connection (the least any Redis message can take),
 * so the ratio says what pub/sub adds. scale_out's two_tier staleness p99 is read against these figures.
 *
 *   bun run bench:bus-delay [--messages 2000]
 */
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { nearestRank } from "../lab/load/request_timeline.ts";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { failFastRedisOptions } from "../strategies/redis_ioredis.ts";

const { values } = parseArgs({
  options: { messages: { type: "string", default: "2000" } },
  strict: true,
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

const bus: number[] = [];
const roundTrip: number[] = [];
// Interleaved, one at a time: the same moments of the machine for both.
for (let i = 0; i < messages; i++) {
  const received = new Promise<number>((resolve) => {
    waiting = resolve;
  });
  const sentMs = performance.now();
  await publisher.publish(channel, `instance key:${i}`);
  bus.push((await received) - sentMs);
  const getMs = performance.now();
  await publisher.get("cachelab:bench:bus:absent");
  roundTrip.push(performance.now() - getMs);
  await Bun.sleep(1);
}
for (const list of [bus, roundTrip]) list.sort((a, b) => a - b);
const percentile = (list: number[], p: number) => nearestRank(list, p) as number;
const row = (name: string, list: number[]) =>
  `${name.padEnd(26)} ${[50, 99, 100].map((p) => percentile(list, p).toFixed(3).padStart(8)).join(" ")}`;
console.log(`${messages} messages, ms:              p50      p99      max`);
console.log(row("PUBLISH → message handler", bus));
console.log(row("GET round trip (baseline)", roundTrip));
console.log(`bus ÷ round trip (p50): ${(percentile(bus, 50) / percentile(roundTrip, 50)).toFixed(2)}`);
publisher.disconnect();
subscriber.disconnect();
