/**
 * The lab's own miss cost and Redis round trip, measured once per run before the first cell: through proxies
 * made as a cell's are, with nothing added and nothing else running, the median of PROBE_SAMPLES sequential
 * executions of the server's detail query (what GET /products/{id} runs on a miss, prepared and read as the
 * server's postgres.js does) and of as many Redis PINGs. `--miss-cost-ms` and `--redis-rtt-ms` are a user's
 * absolute figures; a run adds only their difference from these (lab/plan/overrides.ts addedOverBase).
 */
import { Redis } from "ioredis";
import postgres from "postgres";
import { openCellNetwork } from "../faults/network.ts";
import type { Toxiproxy } from "../faults/toxiproxy.ts";
import type { ProxiedService } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";

/** What a miss and a Redis round trip cost the lab with nothing added (ms, to the µs); null: not probed. */
export interface IdleBase {
  missCostMs: number | null;
  redisRttMs: number | null;
}

export const PROBE_SAMPLES = 200;
/** Untimed first runs: the connection's statement is prepared, and the first pages are read, before timing. */
const WARMUP_SAMPLES = 10;

/**
 * server.ts's `productById` as drizzle sends it (its `productJson`): the lab reads the server through
 * server/, never server.ts, so the text is written out here and its test checks it against the server's body.
 */
export const DETAIL_QUERY = `select (select row_to_json(r)::text from (select "id" as "id",
  "name" as "name", "category_id" as "categoryId", "price_cents" as "priceCents",
  "stock" as "stock", "description" as "description", "version" as "version",
  to_char("updated_at" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updatedAt") r) from "products" where "products"."id" = $1`;

function medianMs(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const value = Number.isInteger(mid)
    ? ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
    : (sorted[Math.floor(mid)] as number);
  return Math.round(value * 1_000) / 1_000;
}

async function timed(samples: number, run: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < WARMUP_SAMPLES; i++) await run(i);
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const startedMs = performance.now();
    await run(WARMUP_SAMPLES + i);
    times.push(performance.now() - startedMs);
  }
  return medianMs(times);
}

/** The detail query's body for `id`, as the server would answer it (undefined: no such row). */
export async function detailBody(sql: postgres.Sql, id: number): Promise<string | undefined> {
  const [row] = await sql.unsafe(DETAIL_QUERY, [id], { prepare: true }).values();
  return row?.[0] as string | undefined;
}

/**
 * The medians at `urls` (the services as given: the probe's proxies, or direct), one after another; `rows`
 * the seeded products, whose ids the detail queries walk. A failure throws: a base is never guessed.
 */
export async function measureIdle(
  urls: Pick<Services, "databaseUrl" | "redisUrl">,
  services: ProxiedService[],
  options: { rows: number; samples?: number },
): Promise<IdleBase> {
  const samples = options.samples ?? PROBE_SAMPLES;
  const base: IdleBase = { missCostMs: null, redisRttMs: null };
  if (services.includes("postgres")) {
    const sql = postgres(urls.databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 });
    try {
      // Ids spread over the table, as misses on a workload's keys are.
      const id = (i: number) => 1 + ((i * 7_919) % options.rows);
      base.missCostMs = await timed(samples, async (i) => {
        if ((await detailBody(sql, id(i))) === undefined)
          throw new RangeError(`Cannot probe the miss cost: product ${id(i)} is not in the database`);
      });
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  if (services.includes("redis")) {
    const redis = new Redis(urls.redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 1_000,
    });
    try {
      await redis.connect();
      base.redisRttMs = await timed(samples, () => redis.ping());
    } finally {
      redis.disconnect();
    }
  }
  return base;
}

/**
 * The lab's base through Toxiproxy: a proxy per service in `proxied`, made as a cell's (openCellNetwork,
 * listening on `listenHost`) with no toxic, measured, then deleted.
 */
export async function idleProbe(
  toxiproxy: Toxiproxy | null,
  services: Services,
  proxied: ProxiedService[],
  options: { tag: string; listenHost: string; rows: number; samples?: number },
): Promise<IdleBase> {
  const network = await openCellNetwork(toxiproxy, services, proxied, options.tag, options.listenHost);
  try {
    return await measureIdle(network.services, proxied, options);
  } finally {
    await network.close();
  }
}
