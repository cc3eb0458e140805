/**
 * The round trip the cell's server actually gets to Postgres and Redis through their Toxiproxy paths,
 * measured beside the load: a PING and a `select 1` through the same proxies every few milliseconds until
 * the run ends, their medians in the row. Toxiproxy delivers a little more delay than a toxic asks for (its
 * timers on a busy machine), so the model takes the delay as delivered, as a user's own ping would give it,
 * not as planned (docs/methodology.md "Miss cost and distance from the command line").
 */
import { Redis } from "ioredis";
import postgres from "postgres";
import type { ProxiedService } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";

export interface PathRtt {
  postgresMs: number | null;
  redisMs: number | null;
}

/** Fewer samples than this is no figure. */
const MIN_SAMPLES = 5;
const INTERVAL_MS = 20;

function median(samples: number[]): number | null {
  if (samples.length < MIN_SAMPLES) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  return Math.round((sorted[Math.floor(sorted.length / 2)] as number) * 10_000) / 10_000;
}

/** Pings each proxied service through its proxy until `signal` aborts; a failed ping is no sample. */
export async function pingPaths(
  services: Pick<Services, "databaseUrl" | "redisUrl">,
  proxied: ProxiedService[],
  signal: AbortSignal,
): Promise<PathRtt> {
  const redis = proxied.includes("redis")
    ? new Redis(services.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 1_000 })
    : null;
  redis?.on("error", () => {});
  const sql = proxied.includes("postgres")
    ? postgres(services.databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 })
    : null;
  const samples = { postgres: [] as number[], redis: [] as number[] };
  const time = async (into: number[], ping: () => Promise<unknown>) => {
    const startedMs = performance.now();
    try {
      await ping();
      into.push(performance.now() - startedMs);
    } catch {
      // Down, hung or reset on purpose (a fault): no sample.
    }
  };
  try {
    await Promise.all([redis?.connect().catch(() => {}), sql ? sql`select 1`.catch(() => {}) : null]);
    while (!signal.aborted) {
      if (redis) await time(samples.redis, () => redis.ping());
      if (sql) await time(samples.postgres, () => sql`select 1`);
      await Bun.sleep(INTERVAL_MS);
    }
  } finally {
    redis?.disconnect();
    await sql?.end({ timeout: 1 });
  }
  return { postgresMs: median(samples.postgres), redisMs: median(samples.redis) };
}
