/**
 * The tiny Elysia server the lab measures: products from PostgreSQL (drizzle prepared statements on
 * postgres.js, or on Bun's built-in `Bun.SQL` with PG_DRIVER=bun-sql) behind one cache strategy chosen at
 * start (redis and two_tier on ioredis, or on Bun's built-in `RedisClient` with REDIS_CLIENT=bun).
 *
 *   CACHE_STRATEGY=two_tier bun server.ts        # DATABASE_URL / REDIS_URL, else the defaults
 *   CACHE_STRATEGY=two_tier bun run server        # the lab's launcher: finds or starts the services first
 */
import { randomUUID } from "node:crypto";
import { sql as drizzleSql, eq } from "drizzle-orm";
import { Elysia } from "elysia";
import { products } from "./seed/schema.ts";
import { cacheKey, type KeyKind } from "./server/cache_keys.ts";
import { openDatabase, openRedis } from "./server/clients.ts";
import { DbShedError, dbGateFor, queryThrough, shedResponse } from "./server/db_gate.ts";
import { createLabRoutes } from "./server/lab_routes.ts";
import { MAX_REQUEST_BODY_BYTES, parseId, parseListQuery, parseUpdate } from "./server/limits.ts";
import { createMeter } from "./server/meter.ts";
import { createMetrics } from "./server/metrics.ts";
import { openapiRoute } from "./server/openapi.ts";
import { prepareSummary } from "./server/product_summary.ts";
import { isStatementTimeout, statementTimeoutResponse } from "./server/statement_timeout.ts";
import { createStrategy } from "./server/strategy.ts";
import type { Lookups } from "./server/tier_timer.ts";
import { MAX_INT4, PROBE_PREFIX, type ServerConfig } from "./server_config.ts";
import type { CacheStrategy } from "./strategies/_strategy.ts";

/**
 * A product as the API's JSON text, built by Postgres: the handler neither maps columns nor serializes
 * (JSON.stringify of a row with a Date cost more than the query itself on the hot path). Compact, keys in
 * this order, `updatedAt` in ISO 8601 UTC with milliseconds, as JSON.stringify would print them.
 */
export const productJson = drizzleSql<string>`(select row_to_json(r)::text from (select ${products.id} as "id",
  ${products.name} as "name", ${products.categoryId} as "categoryId", ${products.priceCents} as "priceCents",
  ${products.stock} as "stock", ${products.description} as "description", ${products.version} as "version",
  to_char(${products.updatedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updatedAt") r)`;

type IdRequest = { params: { id: string }; request: Request };
type PutRequest = IdRequest & { body: unknown };
type Listing = { query: Record<string, string | undefined> };

// One init for every 200, its Headers built once: a Response copies them faster than it converts an object.
const OK_JSON = { headers: new Headers({ "content-type": "application/json" }) };

function json(body: string, status = 200): Response {
  return new Response(body, status === 200 ? OK_JSON : { status, headers: OK_JSON.headers });
}

function problem(status: number, error: string): Response {
  return json(JSON.stringify({ error }), status);
}

/**
 * Builds the app and its clients; `listen` is the caller's. `wrapCache` lets tests break a strategy on purpose;
 * `distinctKeysExactMax` is how many distinct keys /stats counts exactly before it estimates (server/meter.ts).
 */
export function createServer(
  config: ServerConfig,
  options: { wrapCache?: (cache: CacheStrategy) => CacheStrategy; distinctKeysExactMax?: number } = {},
) {
  const { wrapCache = (cache: CacheStrategy) => cache, distinctKeysExactMax } = options;
  const database = openDatabase(config);
  const db = database.db;
  const redis = openRedis(config);
  const metrics = createMetrics(config, () => meter.stats());
  const gate = dbGateFor(config);
  const dbQuery = queryThrough(gate);
  const meter = createMeter({ config, cache: () => cache, redis, gate, distinctKeysExactMax, metrics });
  const { admit, countRead, countQuery, timeLoad, lookup, timed, timeCommands } = meter;
  const newCache = () => wrapCache(createStrategy(config, redis?.client ?? null, { timeCommands }));
  // Replaced by a reset; the handlers read it on every request.
  let cache = newCache();
  const lab = createLabRoutes({
    config,
    database,
    redis,
    meter,
    replaceCache: () => {
      const old = cache;
      cache = newCache();
      return old;
    },
  });

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
  const byId = { product: productById, summary: prepareSummary(db) }; // server/product_summary.ts

  // Loaders stay `async`: a shed thrown at once by the gate still reaches the cache as a rejection.
  async function loadById(kind: KeyKind, id: number, probe: boolean) {
    const [row] = await dbQuery(() => {
      countQuery(probe);
      return timeLoad(probe, kind === "product" ? "detail" : "summary", byId[kind].execute({ id }));
    });
    return row?.body;
  }

  /** GET /products/:id[/summary]. A hit answered synchronously is a Response; a load's, a promise that never rejects. */
  function getProduct(probe: boolean, kind: KeyKind, { params, request }: IdRequest, lookups?: Lookups) {
    if (admit(probe)) return meter.overloaded();
    const id = parseId(params.id, 1, MAX_INT4);
    if (id === null) return problem(400, `id must be an integer in 1..${MAX_INT4}`);
    countRead(probe, kind === "product" ? id : `summary:${id}`);
    const body = lookup(cache, lookups, cacheKey(kind, id), () => loadById(kind, id, probe));
    if (typeof body === "string") return json(body);
    // Elysia's onError sees only what a handler throws, not a promise it returns: the load's errors land here.
    return body.then(
      (found) => (found === undefined ? problem(404, "product not found") : json(found)),
      (error: unknown) => errorResponse(error, request),
    );
  }

  function errorResponse(error: unknown, request: Request): Response {
    // A shed query, from any handler or cache flight: 503, never a crash or a 500.
    if (error instanceof DbShedError) {
      meter.countShed(request);
      return shedResponse(error);
    }
    if (isStatementTimeout(error)) return statementTimeoutResponse(config.pgStatementTimeoutMs);
    console.error(error);
    return problem(500, "internal error");
  }

  function categoryGeneration(category: number, lookups?: Lookups) {
    // Deleting this token on a write makes every cached page of the category unreachable at once.
    return lookup(cache, lookups, `catgen:${category}`, async () => randomUUID());
  }

  const listing = timed("/products", listProducts.bind(null, false));
  const putting = timed("/products/:id", putProduct.bind(null, false), true);
  const app = new Elysia({
    serve: { reusePort: config.reusePort, development: false, maxRequestBodySize: MAX_REQUEST_BODY_BYTES },
  })
    .onError(({ code, error, request }) => {
      meter.countTurnedAway(code, request);
      if (code === "NOT_FOUND") return problem(404, "not found");
      if (code === "PARSE" || code === "VALIDATION") return problem(400, "malformed request");
      return errorResponse(error, request);
    })
    .get("/health", () => json('{"status":"ok"}'))
    .use(openapiRoute)
    .get("/ready", async () => {
      const state = await readiness();
      return json(JSON.stringify(state), state.database && state.cache ? 200 : 503);
    })
    .use(lab.routes)
    .use(metrics.routes) // GET /metrics with METRICS=1 (server/metrics.ts)
    // Bound, so Elysia does not await it (it reads a handler's source for `async`): a hit stays synchronous.
    .get("/products/:id", timed("/products/:id", getProduct.bind(null, false, "product")))
    .get("/products/:id/summary", timed("/products/:id/summary", getProduct.bind(null, false, "summary")))
    // Destructured: Elysia parses only the parts of a request a handler's parameters name.
    .get("/products", ({ query }) => listing({ query }))
    .put("/products/:id", ({ params, body, request }) => putting({ params, body, request }))
    // The lab's probes: the same handlers, counted apart by their route (server_config.ts PROBE_PREFIX).
    .get(`${PROBE_PREFIX}/products/:id`, getProduct.bind(null, true, "product"))
    .get(`${PROBE_PREFIX}/products/:id/summary`, getProduct.bind(null, true, "summary"))
    .get(`${PROBE_PREFIX}/products`, ({ query }) => listProducts(true, { query }))
    .put(`${PROBE_PREFIX}/products/:id`, ({ params, body, request }) =>
      putProduct(true, { params, body, request }),
    );

  async function listProducts(probe: boolean, { query }: Listing, lookups?: Lookups) {
    if (admit(probe)) return meter.overloaded();
    const list = parseListQuery(query);
    if (typeof list === "string") return problem(400, list);
    const { category, page, size } = list;
    countRead(probe, `${category}:${page}:${size}`);
    const generation = await categoryGeneration(category, lookups);
    const body = await lookup(cache, lookups, `list:${category}:${generation}:${page}:${size}`, async () => {
      const rows = await dbQuery(() => {
        countQuery(probe);
        const offset = page * size;
        return timeLoad(probe, "list", productsByCategory.execute({ category, limit: size, offset }));
      });
      return `{"category":${category},"page":${page},"size":${size},"items":[${rows.map((row) => row.body).join(",")}]}`;
    });
    return json(body as string);
  }

  async function putProduct(probe: boolean, { params, body, request }: PutRequest) {
    if (admit(probe)) return meter.overloaded();
    const id = parseId(params.id, 1, MAX_INT4);
    if (id === null) return problem(400, `id must be an integer in 1..${MAX_INT4}`);
    if (!request.headers.get("content-type")?.startsWith("application/json")) {
      return problem(400, "body must be JSON sent with content-type: application/json");
    }
    const update = parseUpdate(body);
    if (typeof update === "string") return problem(400, update);
    const [row] = await dbQuery(() => {
      countQuery(probe, true);
      return db
        .update(products)
        .set({ ...update, version: drizzleSql`${products.version} + 1`, updatedAt: drizzleSql`now()` })
        .where(eq(products.id, id))
        .returning({ body: productJson, categoryId: products.categoryId })
        .execute();
    });
    if (!row) return problem(404, "product not found");
    // Invalidate after the commit (the update ran in its own implicit transaction).
    const keys = [`product:${id}`, `summary:${id}`, `catgen:${row.categoryId}`];
    await Promise.all(keys.map((key) => cache.delete(key)));
    return json(row.body);
  }

  async function readiness(): Promise<{ database: boolean; cache: boolean }> {
    const [databaseUp, cacheReady] = await Promise.all([
      database.ping().then(
        () => true,
        () => false,
      ),
      cache.healthy(),
    ]);
    return { database: databaseUp, cache: cacheReady };
  }

  async function close(): Promise<void> {
    gate?.close();
    meter.close();
    await cache.close();
    redis?.close();
    await database.end();
  }

  return {
    app: app as unknown as Elysia,
    stats: meter.stats,
    info: lab.info,
    reset: lab.reset,
    /** What /ready answers: the database and the cache's backing store both respond. */
    ready: () => readiness().then((state) => state.database && state.cache),
    close,
  };
}

/** A server built by createServer: the app (its `listen` is the caller's), its lab's calls, and `close`. */
export type ProductServer = ReturnType<typeof createServer>;

// `bun server.ts` runs as a process (server/process.ts; loaded here only when run).
if (import.meta.main) process.exit(await (await import("./server/process.ts")).serve(createServer, {}));
