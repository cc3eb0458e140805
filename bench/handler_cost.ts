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
import { median } from "./_tier_timing_cost.ts";

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
      return new Response("{}", { status: 404, headers });
    });
  const paths = [
    ["bare", timed, "/bench/bare"],
    ["ceiling", timed, "/bench/ceiling"],
    ["server", timed, "/products"],
    ["server, TIER_TIMING=0", untimed, "/products"],
  ] as const;
  const requests = paths.map(([, , path]) =>
    Array.from({ length: keys }, (_, i) => new Request(url(path, i + 1))),
  );
  for (const server of [timed, untimed])
    for (let id = 1; id <= keys; id++)
      await (await server.app.fetch(new Request(url("/products", id)))).text();
  /** ns per answer over `count` warmed hits; a hit must answer without a promise, as the server's does. */
  function hits(which: number, count: number): number {
    const app = (paths[which] as (typeof paths)[number])[1].app;
    const list = requests[which] as Request[];
    const startedMs = performance.now();
    for (let i = 0; i < count; i++) {
      const answer = app.fetch(list[i % keys] as Request);
      if (answer instanceof Promise)
        throw new Error(`Cannot measure ${paths[which]?.[0]}: a hit answered a promise`);
    }
    return ((performance.now() - startedMs) * 1e6) / count;
  }
  for (let which = 0; which < paths.length; which++) hits(which, batch); // the JIT warmed on every route
  const ns = paths.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    // Each route first in turn, so none always runs right after another's garbage.
    for (let k = 0; k < paths.length; k++) {
      const which = (round + k) % paths.length;
      (ns[which] as number[]).push(hits(which, batch));
    }
  }
  const perRound = (f: (round: number) => number) => Array.from({ length: rounds }, (_, r) => f(r));
  const at = (which: number, round: number) => (ns[which] as number[])[round] as number;
  const spread = (list: number[], digits: number) => {
    const sorted = [...list].sort((a, b) => a - b);
    return `${median(list).toFixed(digits)} (${sorted[0]?.toFixed(digits)}–${sorted.at(-1)?.toFixed(digits)})`;
  };
  console.log(
    `in process, one app through app.fetch: ${rounds} interleaved rounds of ${batch} warmed local hits over ${keys} ids`,
  );
  console.log("\n| route | ns per hit, median (min–max) |\n| --- | --- |");
  for (const [which, [name]] of paths.entries())
    console.log(`| ${name} | ${spread(ns[which] as number[], 0)} |`);
  console.log("\n| per round | median (min–max) |\n| --- | --- |");
  console.log(
    `| the lookup: ceiling − bare, ns | ${spread(
      perRound((r) => at(1, r) - at(0, r)),
      0,
    )} |`,
  );
  console.log(
    `| the lab's own code: server − ceiling, ns | ${spread(
      perRound((r) => at(2, r) - at(1, r)),
      0,
    )} |`,
  );
  console.log(
    `| of it the tier timing: server − TIER_TIMING=0, ns | ${spread(
      perRound((r) => at(2, r) - at(3, r)),
      0,
    )} |`,
  );
  console.log(
    `| ceiling ÷ server (per hit, in process) | ${spread(
      perRound((r) => at(1, r) / at(2, r)),
      3,
    )} |`,
  );
  console.log(
    `| bare ÷ server (P0 in process) | ${spread(
      perRound((r) => at(0, r) / at(2, r)),
      3,
    )} |`,
  );
} finally {
  await Promise.all([timed.close(), untimed.close()]);
}
