/**
 * Where a local hit's nanoseconds go inside the server's process, without HTTP or a load tool in the way. One
 * app (createServer on the real Postgres, the local strategy, every id warmed) answers three routes through
 * `app.fetch`, alternated batch by batch so drift falls on all alike, and they share its routing:
 *   bare     GET /bench/bare/:id: the product's bytes as a constant (Elysia and a Response, nothing else)
 *   ceiling  GET /bench/ceiling/:id: through strategies/local.ts and nothing else (P0's local ceiling)
 *   server   GET /products/:id: the server's own handler (counting, tier timing, validation, the strategy)
 * and a second app, TIER_TIMING=0, its /products/:id (what the tier timing costs).
 * The differences are the lookup (ceiling − bare), the lab's own code (server − ceiling) and, of it, the timing.
 *
 *   bun run bench:handler-cost [--rounds 21] [--batch 100000] [--keys 1000]
 */
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG, readConfig } from "../server_config.ts";
import { createCache } from "../strategies/local.ts";
import { benchArgs, positiveInt } from "./_args.ts";
import { seededServices } from "./_seeded.ts";
import { spread } from "./_tier_timing_cost.ts";

const values = benchArgs("bun run bench:handler-cost [--rounds 21] [--batch 100000] [--keys 1000]", {
  rounds: { type: "string", default: "21" },
  batch: { type: "string", default: "100000" },
  keys: { type: "string", default: "1000" },
});
const rounds = positiveInt("rounds", values.rounds);
const batch = positiveInt("batch", values.batch);
const keys = positiveInt("keys", values.keys);

const services = await seededServices();
const env = { CACHE_STRATEGY: "local", DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl };
const timed = createServer(readConfig(env));
const untimed = createServer(readConfig({ ...env, TIER_TIMING: "0" }));
const headers = new Headers({ "content-type": "application/json" });
const url = (path: string, id: number) => `http://localhost${path}/${id}`;

try {
  const body = await (await timed.app.fetch(new Request(url("/products", 1)))).text();
  const cache = createCache({ maxSize: DEFAULT_CONFIG.l1MaxEntries, ttlMs: DEFAULT_CONFIG.cacheTtlMs });
  const load = async () => body;
  const keyOf = Array.from({ length: keys + 1 }, (_, id) => `product:${id}`);
  for (let id = 1; id <= keys; id++) await cache.getOrLoad(keyOf[id] as string, load);
  timed.app
    .get("/bench/bare/:id", () => new Response(body, { headers }))
    // As bench/_ceilings.ts's local ceiling; inline, so Elysia does not read it as async (and await it).
    .get("/bench/ceiling/:id", ({ params }) => {
      const key = keyOf[Number(params.id)];
      const value = key === undefined ? undefined : cache.getOrLoad(key, load);
      if (typeof value === "string") return new Response(value, { headers });
      return value === undefined
        ? new Response("{}", { status: 404, headers })
        : value.then((found) => new Response(found, { headers }));
    });
  const routes = [
    { name: "bare", app: timed.app, path: "/bench/bare" },
    { name: "ceiling", app: timed.app, path: "/bench/ceiling" },
    { name: "server", app: timed.app, path: "/products" },
    { name: "server, TIER_TIMING=0", app: untimed.app, path: "/products" },
  ].map((route) => ({
    ...route,
    requests: Array.from({ length: keys }, (_, i) => new Request(url(route.path, i + 1))),
    ns: [] as number[],
  }));
  for (const server of [timed, untimed])
    for (let id = 1; id <= keys; id++)
      await (await server.app.fetch(new Request(url("/products", id)))).text();
  /** ns per answer over `count` warmed hits; a hit must answer without a promise, as the server's does. */
  function hits({ name, app, requests }: (typeof routes)[number], count: number): number {
    const startedMs = performance.now();
    for (let i = 0; i < count; i++) {
      if (app.fetch(requests[i % keys] as Request) instanceof Promise)
        throw new Error(`Cannot measure ${name}: a hit answered a promise`);
    }
    return ((performance.now() - startedMs) * 1e6) / count;
  }
  for (const route of routes) hits(route, batch); // the JIT warmed on every route
  for (let round = 0; round < rounds; round++) {
    // Each route first in turn, so none always runs right after another's garbage.
    for (let k = 0; k < routes.length; k++) {
      const route = routes[(round + k) % routes.length] as (typeof routes)[number];
      route.ns.push(hits(route, batch));
    }
  }
  const [bare, ceiling, server, untimedServer] = routes.map((route) => route.ns) as number[][] as [
    number[],
    number[],
    number[],
    number[],
  ];
  const perRound = (a: number[], b: number[], f: (x: number, y: number) => number) =>
    a.map((x, r) => f(x, b[r] as number));
  const minus = (x: number, y: number) => x - y;
  const over = (x: number, y: number) => x / y;
  console.log(
    `in process, one app through app.fetch: ${rounds} interleaved rounds of ${batch} warmed local hits over ${keys} ids`,
  );
  console.log("\n| route | ns per hit, median (min–max) |\n| --- | --- |");
  for (const { name, ns } of routes) console.log(`| ${name} | ${spread(ns, 0)} |`);
  console.log("\n| per round | median (min–max) |\n| --- | --- |");
  for (const [label, list, digits] of [
    ["the lookup: ceiling − bare, ns", perRound(ceiling, bare, minus), 0],
    ["the lab's own code: server − ceiling, ns", perRound(server, ceiling, minus), 0],
    ["of it the tier timing: server − TIER_TIMING=0, ns", perRound(server, untimedServer, minus), 0],
    ["ceiling ÷ server (per hit, in process)", perRound(ceiling, server, over), 3],
    ["bare ÷ server (P0 in process)", perRound(bare, server, over), 3],
  ] as const)
    console.log(`| ${label} | ${spread([...list], digits)} |`);
} finally {
  await Promise.all([timed.close(), untimed.close()]);
}
