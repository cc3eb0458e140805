/**
 * The ceilings of bench/hot_path.ts: bare Bun.serve routes doing exactly what a server's path does and nothing
 * else, so that what the lab's own server adds is measured against them.
 *   query: GET /products/:id runs the server's own product query (prepared) on a driver, answers its JSON
 *          (P2's ceiling: what HTTP and JSON add to pgbench's figure, before any lab code)
 *   drizzle: the same through drizzle's prepared statement, as the server runs it (what drizzle adds)
 *   strategy: GET /products/:id answers a Redis hit through strategies/redis.ts (what the strategy adds)
 *   get:   GET /products/:id answers a Redis GET of the id's value on a client (P3's ceiling)
 *   local: GET /products/:id answers from strategies/local.ts on Elysia or raw Bun.serve (P0's and P1's)
 * Each prints "ready" once it listens; the same pre-built headers as server.ts's answers.
 */
import { eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { products } from "../seed/schema.ts";
import { productJson } from "../server.ts";

export const CEILING_DRIVERS = ["postgres-js", "bun-sql"] as const;
export const CEILING_CLIENTS = ["ioredis", "node-redis", "bun"] as const;
export type CeilingDriver = (typeof CEILING_DRIVERS)[number];
export type CeilingClient = (typeof CEILING_CLIENTS)[number];

const modulePath = (name: string) => JSON.stringify(Bun.resolveSync(name, REPO_ROOT));

const serveHead = (port: number) => `const headers = new Headers({ "content-type": "application/json" });
const idOf = (url) => Number(url.slice(url.lastIndexOf("/") + 1));
const serve = (fetch) => { Bun.serve({ port: ${port}, hostname: "127.0.0.1", reusePort: false, development: false, fetch }); console.log("ready"); };
`;

/** The server's product query, as drizzle renders it (its one parameter is $1): pgbench's, the ceilings'. */
export function productQuery(): string {
  const query = drizzle
    .mock()
    .select({ body: productJson })
    .from(products)
    .where(eq(products.id, sql.placeholder("id")))
    .toSQL();
  if (!query.sql.includes("$1") || query.sql.includes("$2")) {
    throw new Error(`Cannot adapt the product query for pgbench: ${query.sql}`);
  }
  return query.sql;
}

/**
 * A Bun.serve route running `query` (one $1 parameter, one row whose first column is the body, unnamed as drizzle
 * renders it, so read by position as drizzle reads it) on `driver`, `pool` connections.
 */
export function queryCeiling(driver: CeilingDriver, databaseUrl: string, query: string, pool: number) {
  return (port: number) => {
    const open =
      driver === "postgres-js"
        ? `import postgres from ${modulePath("postgres")};
const sql = postgres(${JSON.stringify(databaseUrl)}, { max: ${pool}, prepare: true, onnotice: () => {} });
const run = (id) => sql.unsafe(${JSON.stringify(query)}, [id], { prepare: true }).values();`
        : `const sql = new Bun.SQL(${JSON.stringify(databaseUrl)}, { max: ${pool}, prepare: true });
const run = (id) => sql.unsafe(${JSON.stringify(query)}, [id]).values();`;
    return `${open}
${serveHead(port)}
await run(1);
serve(async (request) => {
  const [row] = await run(idOf(request.url));
  return row ? new Response(row[0], { headers }) : new Response("{}", { status: 404, headers });
});
`;
  };
}

/**
 * The same route through drizzle: the server's own product statement (server.ts's `productJson`, prepared as
 * the server prepares it) executed on `driver` with nothing around it. What the drizzle ceiling adds over
 * `queryCeiling` is drizzle's `execute`; what the server adds over it is the lab's own handler.
 */
export function drizzleCeiling(driver: CeilingDriver, databaseUrl: string, pool: number) {
  return (port: number) => {
    const open =
      driver === "postgres-js"
        ? `import postgres from ${modulePath("postgres")};
import { drizzle } from ${modulePath("drizzle-orm/postgres-js")};
const db = drizzle({ client: postgres(${JSON.stringify(databaseUrl)}, { max: ${pool}, onnotice: () => {} }) });`
        : `import { drizzle } from ${modulePath("drizzle-orm/bun-sql")};
const db = drizzle({ client: new Bun.SQL(${JSON.stringify(databaseUrl)}, { max: ${pool}, prepare: true }) });`;
    return `${open}
import { eq, sql } from ${modulePath("drizzle-orm")};
import { products } from ${JSON.stringify(`${REPO_ROOT}/seed/schema.ts`)};
import { productJson } from ${JSON.stringify(`${REPO_ROOT}/server.ts`)};
const statement = db.select({ body: productJson }).from(products)
  .where(eq(products.id, sql.placeholder("id"))).prepare("cachelab_product_by_id");
${serveHead(port)}
await statement.execute({ id: 1 });
serve(async (request) => {
  const [row] = await statement.execute({ id: idOf(request.url) });
  return row ? new Response(row.body, { headers }) : new Response("{}", { status: 404, headers });
});
`;
  };
}

/** The bench's own keys expire by themselves: nothing it writes stays in the lab's Redis. */
export const KEYS_TTL_MS = 600_000;

/** A Bun.serve route answering a GET of `prefix` + id on `client`, after SETting `body` for ids 1..keys. */
export function getCeiling(
  client: CeilingClient,
  redisUrl: string,
  prefix: string,
  keys: number,
  body: string,
) {
  return (port: number) => {
    const open = {
      ioredis: `import { Redis } from ${modulePath("ioredis")};
const redis = new Redis(${JSON.stringify(redisUrl)});
const get = (key) => redis.get(key);
const put = (key, value) => redis.set(key, value, "PX", ${KEYS_TTL_MS});`,
      "node-redis": `import { createClient } from ${modulePath("redis")};
const redis = await createClient({ url: ${JSON.stringify(redisUrl)} }).connect();
const get = (key) => redis.get(key);
const put = (key, value) => redis.set(key, value, { PX: ${KEYS_TTL_MS} });`,
      bun: `const redis = new Bun.RedisClient(${JSON.stringify(redisUrl)});
await redis.connect();
const get = (key) => redis.get(key);
const put = (key, value) => redis.send("SET", [key, value, "PX", "${KEYS_TTL_MS}"]);`,
    }[client];
    return `${open}
${serveHead(port)}
const body = ${JSON.stringify(body)};
for (let id = 1; id <= ${keys}; id++) await put(${JSON.stringify(prefix)} + id, body);
serve(async (request) => {
  const value = await get(${JSON.stringify(prefix)} + idOf(request.url));
  return value === null ? new Response("{}", { status: 404, headers }) : new Response(value, { headers });
});
`;
  };
}

/**
 * P3's strategy ceiling: a Bun.serve route answering from strategies/redis.ts (the server's default settings,
 * on `client`'s adapter made from the URL) and nothing else, each id loaded once and then a Redis hit. What
 * it adds over `getCeiling` is the strategy's own (its entry, breaker and flights); what the server adds over
 * it is the lab's handler.
 */
export function strategyCeiling(
  client: "ioredis" | "bun",
  redisUrl: string,
  prefix: string,
  keys: number,
  body: string,
  ttlMs: number,
) {
  return (port: number) => {
    const adapter =
      client === "ioredis"
        ? `import { ioredisCommands as commands } from ${JSON.stringify(`${REPO_ROOT}/strategies/redis_ioredis.ts`)};`
        : `import { bunCommands as commands } from ${JSON.stringify(`${REPO_ROOT}/strategies/redis_bun.ts`)};`;
    return `${adapter}
import { createCache } from ${JSON.stringify(`${REPO_ROOT}/strategies/redis.ts`)};
${serveHead(port)}
const body = ${JSON.stringify(body)};
const cache = createCache({ redis: commands(${JSON.stringify(redisUrl)}), prefix: ${JSON.stringify(prefix)}, ttlMs: ${ttlMs} });
const load = async () => body;
// Each id loaded once; its fill goes to Redis in the background, so pass again until a pass loads nothing
// (its hits are then Redis's); never measured on loads.
let settled = false;
for (let pass = 0; pass < 50 && !settled; pass++) {
  const before = cache.stats().loads;
  for (let id = 1; id <= ${keys}; id++) await cache.getOrLoad("product:" + id, load);
  settled = pass > 0 && cache.stats().loads === before;
  await Bun.sleep(20);
}
if (!settled) throw new Error("Cannot measure the strategy ceiling: its keys still loaded after 50 passes");
serve(async (request) => {
  const value = await cache.getOrLoad("product:" + idOf(request.url), load);
  return value === undefined ? new Response("{}", { status: 404, headers }) : new Response(value, { headers });
});
`;
  };
}

/** A hit answered without a promise, as the server's is; the route's code for the id `id` evaluates to. */
const answer = (id: string) => `{
  const key = keyOf[${id}];
  const value = key === undefined ? undefined : cache.getOrLoad(key, load);
  if (typeof value === "string") return new Response(value, { headers });
  return value === undefined ? missing.clone() : value.then(toResponse);
}`;

/**
 * P0's and P1's strategy ceiling: GET /products/:id answered from strategies/local.ts (the server's L1 size
 * and TTL, each id loaded once, its key made once as the server's are) on a bare Elysia route or on raw
 * Bun.serve, and nothing else. What it adds over a route answering a constant is the lookup itself (quick-lru's
 * `get`, its expiry check, the strategy's counting); what the server adds over it is the lab's handler.
 */
export function localCeiling(
  framework: "elysia" | "raw",
  body: string,
  keys: number,
  maxSize: number,
  ttlMs: number,
) {
  return (port: number) => `import { createCache } from ${JSON.stringify(`${REPO_ROOT}/strategies/local.ts`)};
${serveHead(port)}
const body = ${JSON.stringify(body)};
const cache = createCache({ maxSize: ${maxSize}, ttlMs: ${ttlMs} });
const load = async () => body;
const keyOf = Array.from({ length: ${keys + 1} }, (_, id) => "product:" + id);
for (let id = 1; id <= ${keys}; id++) await cache.getOrLoad(keyOf[id], load);
const missing = new Response("{}", { status: 404, headers });
const toResponse = (value) => (value === undefined ? missing.clone() : new Response(value, { headers }));
${
  framework === "raw"
    ? `serve((request) => ${answer("idOf(request.url)")});`
    : `import { Elysia } from ${modulePath("elysia")};
// Inline, not \`=> answer(…)\`: Elysia reads a handler's source, and \`return f(\` or \`=> f(\` make it await
// the answer (Bun's transpiler turns \`const r = f(); return r;\` into \`return f()\`).
const route = ({ params }) => ${answer("Number(params.id)")};
const app = new Elysia({ serve: { reusePort: false, development: false } }).get("/products/:id", route);
if (app.fetch(new Request("http://localhost/products/1")) instanceof Promise) {
  throw new Error("Cannot measure the local ceiling: Elysia awaits its hits (it read the handler as async)");
}
app.listen({ port: ${port}, hostname: "127.0.0.1" });
console.log("ready");`
}
`;
}
