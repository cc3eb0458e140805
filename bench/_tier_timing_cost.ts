/**
 * What the tier timing adds to a local hit where nothing else moves: two servers built in this process
 * (createServer, the real app on the real Postgres), timing on (the default) and off, answering the same warmed
 * local hits through `app.handle`, alternated batch by batch so drift in the machine falls on both alike.
 * Used by bench/tier_timing.ts and by bench/hot_path.ts's ratio T.
 */
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG, readConfig } from "../server_config.ts";

export interface TimingCost {
  /** Local hits per second, one figure a round. */
  timed: number[];
  untimed: number[];
  /** on ÷ off, and the nanoseconds a hit the timing added, per round. */
  ratios: number[];
  addedNs: number[];
}

export async function timingCost(
  services: { databaseUrl: string; redisUrl: string },
  options: { rounds: number; batch: number; keys: number },
): Promise<TimingCost> {
  const { rounds, batch, keys } = options;
  const env = { CACHE_STRATEGY: "local", DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl };
  const timed = createServer(readConfig({ ...env, TIER_TIMING: String(DEFAULT_CONFIG.tierTiming) }));
  const untimed = createServer(readConfig({ ...env, TIER_TIMING: "0" }));
  const requests = Array.from({ length: keys }, (_, i) => new Request(`http://localhost/products/${i + 1}`));
  /** Answers `count` warmed local hits through the app; hits per second. */
  async function hits(server: ReturnType<typeof createServer>, count: number): Promise<number> {
    const startedMs = performance.now();
    for (let i = 0; i < count; i++) {
      const answer = server.app.handle(requests[i % keys] as Request);
      // A local hit is answered synchronously; anything else (a miss) is awaited.
      if (answer instanceof Promise) await answer;
    }
    return count / ((performance.now() - startedMs) / 1_000);
  }
  try {
    for (const server of [timed, untimed]) await hits(server, keys * 3); // loads, then warm the JIT
    const cost: TimingCost = { timed: [], untimed: [], ratios: [], addedNs: [] };
    for (let round = 0; round < rounds; round++) {
      // Alternate which goes first, so neither always runs right after a GC of the other's garbage.
      const order = round % 2 === 0 ? ([timed, untimed] as const) : ([untimed, timed] as const);
      const [a, b] = [await hits(order[0], batch), await hits(order[1], batch)];
      const [on, off] = order[0] === timed ? [a, b] : [b, a];
      cost.timed.push(on);
      cost.untimed.push(off);
      cost.ratios.push(on / off);
      cost.addedNs.push(1e9 / on - 1e9 / off);
    }
    return cost;
  } finally {
    await Promise.all([timed.close(), untimed.close()]);
  }
}

/** The median of a list (the lower middle of an even one). */
export function median(list: number[]): number {
  return [...list].sort((x, y) => x - y)[Math.floor((list.length - 1) / 2)] as number;
}

/** Median and range of a list, as the benches' tables print them (a single figure alone). */
export function spread(list: number[], digits: number): string {
  const sorted = [...list].sort((a, b) => a - b);
  const f = (value: number) => value.toFixed(digits);
  return sorted.length === 1
    ? f(median(sorted))
    : `${f(median(sorted))} (${f(sorted[0] as number)}–${f(sorted.at(-1) as number)})`;
}
