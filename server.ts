/**
 * The tiny Elysia server the lab measures: products from PostgreSQL (drizzle prepared statements on
 * postgres.js) behind one cache strategy chosen at start.
 *
 *   CACHE_STRATEGY=two_tier bun server.ts        # DATABASE_URL / REDIS_URL, else the defaults
 *   CACHE_STRATEGY=two_tier bun run server        # the lab's launcher: finds or starts the services first
 */
import { randomUUID } from "node:crypto";
import { sql as drizzleSql, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { Elysia } from "elysia";
import { Redis } from "ioredis";
import postgres from "postgres";
import { products } from "./seed/schema.ts";
import { MAX_INT4, PROBE_HEADER, readConfig, type ServerConfig, type StrategyName } from "./server_config.ts";
import type { CacheStats, CacheStrategy } from "./strategies/_strategy.ts";
import * as local from "./strategies/local.ts";
import * as none from "./strategies/none.ts";
import * as redisStrategy from "./strategies/redis.ts";
import * as twoTier from "./strategies/two_tier.ts";

function createStrategy(config: ServerConfig, redis: Redis | null): CacheStrategy {
  const prefix = config.redisKeyPrefix;
  switch (config.strategy) {
    case "none":
      return none.createCache() satisfies CacheStrategy;
    case "local":
      return local.createCache({
        maxSize: config.l1MaxEntries,
        ttlMs: config.cacheTtlMs,
      }) satisfies CacheStrategy;
    case "redis":
      return redisStrategy.createCache({
        redis: redis as Redis,
        ttlMs: config.cacheTtlMs,
        prefix,
      }) satisfies CacheStrategy;
    case "two_tier":
      return twoTier.createCache({
        redis: redis as Redis,
        ttlMs: config.cacheTtlMs,
        l1MaxSize: config.l1MaxEntries,
        l1TtlMs: config.l1TtlMs,
        prefix,
      }) satisfies CacheStrategy;
  }
}

/**
 * A product as the API's JSON text, built by Postgres: the handler neither maps columns nor serializes
 * (JSON.stringify of a row with a Date cost more than the query itself on the hot path). Compact, keys in
 * this order, `updatedAt` in ISO 8601 UTC with milliseconds, as JSON.stringify would print them.
 */
const productJson = drizzleSql<string>`(select row_to_json(r)::text from (select ${products.id} as "id",
  ${products.name} as "name", ${products.categoryId} as "categoryId", ${products.priceCents} as "priceCents",
  ${products.stock} as "stock", ${products.description} as "description", ${products.version} as "version",
  to_char(${products.updatedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updatedAt") r)`;

/** Parses a path or query integer; `null` unless it is a canonical decimal in min..max. */
function parseId(raw: string | undefined, min: number, max: number): number | null {
  if (raw === undefined || !/^(0|[1-9]\d{0,9})$/.test(raw)) return null;
  const value = Number(raw);
  return value >= min && value <= max ? value : null;
}

const JSON_HEADERS = { "content-type": "application/json" };

function json(body: string, status = 200): Response {
  return new Response(body, { status, headers: JSON_HEADERS });
}

function problem(status: number, error: string): Response {
  return json(JSON.stringify({ error }), status);
}

const UPDATE_FIELDS = new Set(["priceCents", "stock", "name"]);
type ProductUpdate = { priceCents?: number; stock?: number; name?: string };

/** Validates a PUT body; returns the update or a message saying what is wrong. */
export function parseUpdate(body: unknown): ProductUpdate | string {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "body must be a JSON object";
  const entries = Object.entries(body);
  if (entries.length === 0) return "body must set at least one of priceCents, stock, name";
  const update: ProductUpdate = {};
  for (const [field, value] of entries) {
    if (!UPDATE_FIELDS.has(field))
      return `unknown field ${JSON.stringify(field)}: expected priceCents, stock, name`;
    if (field === "name") {
      if (typeof value !== "string" || value.trim() === "") return "name must be a non-empty string";
      update.name = value;
    } else {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_INT4) {
        return `${field} must be an integer in 0..${MAX_INT4}`;
      }
      update[field as "priceCents" | "stock"] = value as number;
    }
  }
  return update;
}

export interface ServerStats extends Omit<CacheStats, "errors"> {
  strategy: StrategyName;
  instanceId: string;
  /**
   * Requests to /products routes (the lab's own /stats, /health and /ready polls are not counted, nor are
   * probes: requests sent with the `x-cachelab-probe` header, such as write_mix's stale-read checker).
   */
  requests: number;
  /** Queries the handlers sent to Postgres for requests (loader calls plus writes), probes not included. */
  dbQueries: number;
  /** Valid GETs (a detail or a list page): the requests a cache can answer. */
  reads: number;
  /** Of `reads`, those that reached Postgres (a loader call; coalesced misses share one). */
  readDbQueries: number;
  /** PUTs that reached Postgres. */
  writes: number;
  /** Distinct resources (a product id, a list page) the reads asked for since the window began. */
  distinctKeys: number;
  /** Probe requests, and the queries they sent to Postgres. */
  probes: number;
  probeDbQueries: number;
  cacheErrors: number;
}

export interface Lab {
  app: Elysia;
  stats(): ServerStats;
  /** What /ready answers: the database and the cache's backing store both respond. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** Builds the app and its clients; `listen` is the caller's. `wrapCache` lets tests break a strategy on purpose. */
export function createLab(
  config: ServerConfig,
  options: { wrapCache?: (cache: CacheStrategy) => CacheStrategy } = {},
): Lab {
  const pg = postgres(config.databaseUrl, {
    max: config.pgPoolMax,
    onnotice: () => {},
    connection: { application_name: `cachelab-${config.strategy}` },
  });
  const db = drizzle({ client: pg });
  const redis =
    config.strategy === "redis" || config.strategy === "two_tier"
      ? new Redis(config.redisUrl, redisStrategy.failFastRedisOptions)
      : null;
  if (redis) {
    redis.on("error", () => {}); // a down Redis shows as cache errors and in /ready, not as log spam
    redis.connect().catch(() => {});
  }
  const created = createStrategy(config, redis);
  const cache = options.wrapCache ? options.wrapCache(created) : created;
  const instanceId = randomUUID();
  const counts = { requests: 0, reads: 0, readDbQueries: 0, writes: 0, probes: 0, probeDbQueries: 0 };
  // The resources read since the window began (POST /stats/window): ids as numbers, list pages as strings.
  let keysSeen = new Set<number | string>();
  // Probe requests, marked once in onRequest so the handlers never read the headers again.
  const probeRequests = new WeakSet<Request>();

  /** Counts a read and its resource unless it is a probe; returns whether it is one. */
  function countRead(request: Request, key: number | string): boolean {
    if (probeRequests.has(request)) return true;
    counts.reads++;
    keysSeen.add(key);
    return false;
  }

  function countQuery(probe: boolean, write = false): void {
    if (probe) counts.probeDbQueries++;
    else if (write) counts.writes++;
    else counts.readDbQueries++;
  }

  const productById = db
    .select({ body: productJson })
    .from(products)
    .where(eq(products.id, drizzleSql.placeholder("id")))
    .prepare("cachelab_product_by_id");
  const productsByCategory = db
    .select({ body: productJson })
    .from(products)
    .where(eq(products.categoryId, drizzleSql.placeholder("category")))
    .orderBy(products.id)
    .limit(drizzleSql.placeholder("limit"))
    .offset(drizzleSql.placeholder("offset"))
    .prepare("cachelab_products_by_category");

  async function loadProduct(id: number, probe: boolean): Promise<string | undefined> {
    countQuery(probe);
    const [row] = await productById.execute({ id });
    return row?.body;
  }

  function categoryGeneration(category: number): Promise<string | undefined> {
    // Deleting this token on a write makes every cached page of the category unreachable at once.
    return cache.getOrLoad(`catgen:${category}`, async () => randomUUID());
  }

  const app = new Elysia({ serve: { reusePort: config.reusePort, development: false } })
    .onRequest(({ request }) => {
      if (!request.url.includes("/products")) return;
      if (request.headers.get(PROBE_HEADER) === null) {
        counts.requests++;
      } else {
        counts.probes++;
        probeRequests.add(request);
      }
    })
    .onError(({ code, error }) => {
      if (code === "NOT_FOUND") return problem(404, "not found");
      if (code === "PARSE" || code === "VALIDATION") return problem(400, "malformed request");
      console.error(error);
      return problem(500, "internal error");
    })
    .get("/health", () => json('{"status":"ok"}'))
    .get("/ready", async () => {
      const state = await readiness();
      return json(JSON.stringify(state), state.database && state.cache ? 200 : 503);
    })
    .get("/stats", () => json(JSON.stringify(stats())))
    .post("/stats/window", () => {
      // One snapshot and the new window at the same instant: the caller's "before" for a measured run.
      const snapshot = stats();
      keysSeen = new Set();
      return json(JSON.stringify(snapshot));
    })
    .get("/products/:id", async ({ params, request }) => {
      const id = parseId(params.id, 1, MAX_INT4);
      if (id === null) return problem(400, `id must be an integer in 1..${MAX_INT4}`);
      const probe = countRead(request, id);
      const body = await cache.getOrLoad(`product:${id}`, () => loadProduct(id, probe));
      return body === undefined ? problem(404, "product not found") : json(body);
    })
    .get("/products", async ({ query, request }) => {
      for (const name of Object.keys(query)) {
        if (name !== "category" && name !== "page" && name !== "size")
          return problem(400, `unknown parameter ${name}`);
      }
      const category = parseId(query.category, 1, MAX_INT4);
      const page = query.page === undefined ? 0 : parseId(query.page, 0, 1_000_000);
      const size = query.size === undefined ? 20 : parseId(query.size, 1, 100);
      if (category === null) return problem(400, `category must be an integer in 1..${MAX_INT4}`);
      if (page === null) return problem(400, "page must be an integer in 0..1000000");
      if (size === null) return problem(400, "size must be an integer in 1..100");
      const probe = countRead(request, `${category}:${page}:${size}`);
      const generation = await categoryGeneration(category);
      const body = await cache.getOrLoad(`list:${category}:${generation}:${page}:${size}`, async () => {
        countQuery(probe);
        const rows = await productsByCategory.execute({ category, limit: size, offset: page * size });
        return `{"category":${category},"page":${page},"size":${size},"items":[${rows.map((row) => row.body).join(",")}]}`;
      });
      return json(body as string);
    })
    .put("/products/:id", async ({ params, body, request }) => {
      const probe = probeRequests.has(request);
      const id = parseId(params.id, 1, MAX_INT4);
      if (id === null) return problem(400, `id must be an integer in 1..${MAX_INT4}`);
      if (!request.headers.get("content-type")?.startsWith("application/json")) {
        return problem(400, "body must be JSON sent with content-type: application/json");
      }
      const update = parseUpdate(body);
      if (typeof update === "string") return problem(400, update);
      countQuery(probe, true);
      const [row] = await db
        .update(products)
        .set({ ...update, version: drizzleSql`${products.version} + 1`, updatedAt: drizzleSql`now()` })
        .where(eq(products.id, id))
        .returning({ body: productJson, categoryId: products.categoryId });
      if (!row) return problem(404, "product not found");
      // Invalidate after the commit (the update ran in its own implicit transaction).
      await Promise.all([cache.delete(`product:${id}`), cache.delete(`catgen:${row.categoryId}`)]);
      return json(row.body);
    });

  async function readiness(): Promise<{ database: boolean; cache: boolean }> {
    const [database, cacheReady] = await Promise.all([
      pg`select 1`.then(
        () => true,
        () => false,
      ),
      cache.healthy(),
    ]);
    return { database, cache: cacheReady };
  }

  function stats(): ServerStats {
    const { errors, ...rest } = cache.stats();
    return {
      strategy: config.strategy,
      instanceId,
      ...counts,
      dbQueries: counts.readDbQueries + counts.writes,
      distinctKeys: keysSeen.size,
      cacheErrors: errors,
      ...rest,
    };
  }

  async function close(): Promise<void> {
    await cache.close();
    redis?.disconnect();
    await pg.end({ timeout: 5 });
  }

  return {
    app: app as unknown as Elysia,
    stats,
    ready: async () => {
      const state = await readiness();
      return state.database && state.cache;
    },
    close,
  };
}

/** Runs a lab as a process: listen, log, drain on SIGINT/SIGTERM. Exit code as the result. */
export async function serve(options: Parameters<typeof createLab>[1] = {}): Promise<number> {
  let config: ServerConfig;
  try {
    config = readConfig(process.env);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  process.on("unhandledRejection", (reason) => {
    console.error("unhandled rejection:", reason);
    process.exit(1);
  });
  const lab = createLab(config, options);
  try {
    lab.app.listen({ port: config.port, hostname: config.host });
  } catch (error) {
    console.error(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    await lab.close();
    return 1;
  }
  console.log(
    `cachelab server: strategy=${config.strategy} http://127.0.0.1:${lab.app.server?.port} pid=${process.pid}`,
  );
  const { promise: stopped, resolve } = Promise.withResolvers<string>();
  process.once("SIGINT", () => resolve("SIGINT"));
  process.once("SIGTERM", () => resolve("SIGTERM"));
  const signal = await stopped;
  console.log(`cachelab server: ${signal}, draining`);
  const server = lab.app.server;
  // Stop accepting, let in-flight requests finish (bounded), then close the clients.
  await Promise.race([server?.stop(false), Bun.sleep(5_000)]);
  server?.stop(true);
  await lab.close();
  return 0;
}

if (import.meta.main) process.exit(await serve());
