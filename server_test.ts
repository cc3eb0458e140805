import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import postgres from "postgres";
import { type ServerProcess, startServer } from "./lab/cell/server_process.ts";
import { eventually, testDatabaseUrl, testServices, uniquePrefix } from "./lab/shared/testing.ts";
import type { SeedPlan } from "./seed/seed.ts";
import { runIdOf } from "./server/identity.ts";
import type { ServerStats } from "./server/meter.ts";
import { createServer, type ProductServer } from "./server.ts";
import {
  ADMIN_TOKEN_HEADER,
  DEFAULT_CONFIG,
  PG_DRIVERS,
  PROBE_PREFIX,
  REDIS_CLIENTS,
  readConfig,
  type ServerConfig,
  STRATEGY_NAMES,
} from "./server_config.ts";

const PLAN: SeedPlan = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let databaseUrl: string;
let redisUrl: string;
let sql: postgres.Sql;

beforeAll(async () => {
  databaseUrl = await testDatabaseUrl(PLAN);
  redisUrl = (await testServices()).redisUrl;
  sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql.end();
});
afterEach(async () => {
  await releaseLocks();
});

function configFor(strategy: ServerConfig["strategy"]): ServerConfig {
  return {
    ...DEFAULT_CONFIG,
    strategy,
    databaseUrl,
    redisUrl,
    redisKeyPrefix: uniquePrefix(`server-${strategy}`),
  };
}

/** The row as the API must render it, read straight from Postgres (not through drizzle). */
async function dbRows(ids: number[]): Promise<Map<number, Record<string, unknown>>> {
  const rows = await sql<
    {
      id: number;
      name: string;
      category_id: number;
      price_cents: number;
      stock: number;
      description: string;
      version: number;
      updated_at: Date;
    }[]
  >`select * from products where id = any(${ids}::int[]) order by id`;
  return new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        name: row.name,
        categoryId: row.category_id,
        priceCents: row.price_cents,
        stock: row.stock,
        description: row.description,
        version: row.version,
        updatedAt: row.updated_at.toISOString(),
      },
    ]),
  );
}

async function call(
  lab: ProductServer,
  path: string,
  init?: RequestInit,
): Promise<{ status: number; body: unknown }> {
  const response = await lab.app.handle(new Request(`http://localhost${path}`, init));
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

/** A POST to /admin/* or /stats/window as the lab sends it: with the admin header (any value on loopback). */
function adminPost(token = "any"): RequestInit {
  return { method: "POST", headers: { [ADMIN_TOKEN_HEADER]: token } };
}

function put(body: unknown, contentType = "application/json"): RequestInit {
  return {
    method: "PUT",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
}

test("STRATEGY_NAMES are exactly the strategy files (the ones with a createCache; adapters have none)", () => {
  const dir = `${import.meta.dir}/strategies`;
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".ts") && !name.startsWith("_") && !name.endsWith("_test.ts"))
    .filter((name) => readFileSync(`${dir}/${name}`, "utf8").includes("export function createCache("))
    .map((name) => name.slice(0, -3))
    .sort();
  expect([...STRATEGY_NAMES].sort() as string[]).toEqual(files);
});

describe("readConfig", () => {
  test("readConfig rejects an unknown strategy and lists the valid ones", () => {
    expect(() => readConfig({ CACHE_STRATEGY: "memcached" })).toThrow(
      "Cannot read CACHE_STRATEGY: expected one of none, local, redis, two_tier, tracking: received memcached",
    );
  });

  test("readConfig rejects a non-integer number", () => {
    expect(() => readConfig({ PG_POOL_MAX: "ten" })).toThrow("Cannot read PG_POOL_MAX");
    expect(() => readConfig({ L1_TTL_MS: "-5" })).toThrow("Cannot read L1_TTL_MS");
  });

  test("readConfig defaults the database gate to a 2 s acquire timeout, takes 0 for none, and rejects bad PG_QUEUE_MAX / PG_ACQUIRE_TIMEOUT_MS", () => {
    // Safe by default (issue 19): a stalled database sheds after 2 s instead of queueing forever.
    expect(readConfig({})).toMatchObject({ pgQueueMax: 0, pgAcquireTimeoutMs: 2_000 });
    expect(readConfig({ PG_QUEUE_MAX: "", PG_ACQUIRE_TIMEOUT_MS: "" })).toMatchObject({
      pgQueueMax: 0,
      pgAcquireTimeoutMs: 2_000,
    });
    expect(readConfig({ PG_ACQUIRE_TIMEOUT_MS: "0" })).toMatchObject({ pgAcquireTimeoutMs: 0 });
    expect(readConfig({ PG_QUEUE_MAX: "64", PG_ACQUIRE_TIMEOUT_MS: "250" })).toMatchObject({
      pgQueueMax: 64,
      pgAcquireTimeoutMs: 250,
    });
    for (const raw of ["-1", "1.5", "many", "1e3", "1000001"]) {
      expect(() => readConfig({ PG_QUEUE_MAX: raw })).toThrow(
        `Cannot read PG_QUEUE_MAX: expected an integer in 0..1000000: received ${raw}`,
      );
    }
    for (const raw of ["-5", "0.5", "soon", "2147483648"]) {
      expect(() => readConfig({ PG_ACQUIRE_TIMEOUT_MS: raw })).toThrow(
        `Cannot read PG_ACQUIRE_TIMEOUT_MS: expected an integer in 0..2147483647: received ${raw}`,
      );
    }
  });

  test("readConfig defaults PG_DRIVER to postgres-js, takes bun-sql, and lists the drivers for another", () => {
    expect(readConfig({}).pgDriver).toBe("postgres-js");
    expect(readConfig({ PG_DRIVER: "bun-sql" }).pgDriver).toBe("bun-sql");
    expect(() => readConfig({ PG_DRIVER: "pg" })).toThrow(
      "Cannot read PG_DRIVER: expected one of postgres-js, bun-sql: received pg",
    );
  });

  test("readConfig defaults REDIS_CLIENT to ioredis, takes bun, and lists the clients for another", () => {
    expect(readConfig({}).redisClient).toBe("ioredis");
    expect(readConfig({ REDIS_CLIENT: "bun" }).redisClient).toBe("bun");
    expect(() => readConfig({ REDIS_CLIENT: "jedis" })).toThrow(
      "Cannot read REDIS_CLIENT: expected one of ioredis, bun, node-redis: received jedis",
    );
  });

  test("readConfig defaults reusePort to off", () => {
    expect(readConfig({}).reusePort).toBe(false);
    expect(readConfig({ REUSE_PORT: "1" }).reusePort).toBe(true);
  });
});

// Every strategy on each Postgres driver: the same bodies, lists, writes and counters.
for (const [strategy, pgDriver] of PG_DRIVERS.flatMap((driver) =>
  STRATEGY_NAMES.map((name) => [name, driver] as const),
)) {
  describe(`server with ${strategy}${pgDriver === "postgres-js" ? "" : ` on ${pgDriver}`}`, () => {
    let lab: ProductServer;
    beforeAll(async () => {
      lab = createServer({ ...configFor(strategy), pgDriver });
      expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
    });
    afterAll(async () => {
      await lab.close();
    });

    // The hot path's shape (docs/strategies.md): an in-process hit (local, two_tier's and tracking's L1) is
    // answered without a promise, all the way out of the app; a load, and a Redis hit, with one. An async
    // handler or getOrLoad turns this red.
    const inProcess = strategy === "local" || strategy === "two_tier" || strategy === "tracking";
    test(`${strategy}: a GET answered by ${inProcess ? "a hit is a Response, not a promise" : "a promise"}`, async () => {
      const request = () => lab.app.fetch(new Request("http://localhost/products/17"));
      const miss = request();
      expect(miss).toBeInstanceOf(Promise);
      expect((await miss).status).toBe(200);
      // tracking's L1 takes a value from a Redis hit only (its own fill drops it): a later read is in process.
      const answered = async () => {
        const again = request();
        expect((await again).status).toBe(200);
        return !(again instanceof Promise);
      };
      if (strategy === "tracking") expect(await eventually(answered)).toBe(true);
      else expect(await answered()).toBe(inProcess);
    });

    test(`${strategy}: 200 random ids equal their database rows, on a miss and on a hit`, async () => {
      const ids = Array.from({ length: 200 }, () => 1 + Math.floor(Math.random() * PLAN.rows));
      const expected = await dbRows(ids);
      for (const pass of ["miss", "hit"]) {
        for (const id of ids) {
          const response = await lab.app.handle(new Request(`http://localhost/products/${id}`));
          // Byte-for-byte what JSON.stringify prints for the row: key order, compact, ISO timestamps.
          const body = await response.text();
          expect({ pass, status: response.status, body }).toEqual({
            pass,
            status: 200,
            body: JSON.stringify(expected.get(id)),
          });
          expect(response.headers.get("content-type")).toBe("application/json");
        }
      }
    });

    test(`${strategy}: list pages equal the database query`, async () => {
      for (const [category, page, size] of [
        [1, 0, 20],
        [7, 2, 9],
        [50, 0, 100],
        [13, 1_000, 5],
      ] as const) {
        const rows = await sql<{ id: number }[]>`
          select id from products where category_id = ${category} order by id limit ${size} offset ${page * size}`;
        const expected = await dbRows(rows.map((row) => row.id));
        for (let pass = 0; pass < 2; pass++) {
          const { status, body } = await call(
            lab,
            `/products?category=${category}&page=${page}&size=${size}`,
          );
          expect(status).toBe(200);
          expect(body).toEqual({ category, page, size, items: rows.map((row) => expected.get(row.id)) });
        }
      }
    });

    test(`${strategy}: PUT then GET returns the new version, in the detail and in its list page`, async () => {
      const id = 1 + Math.floor(Math.random() * PLAN.rows);
      const [before] = [...(await dbRows([id])).values()] as [Record<string, unknown>];
      const category = before.categoryId as number;
      const listPath = `/products?category=${category}&size=100`;
      const [{ n }] =
        (await sql`select count(*)::int as n from products where category_id = ${category} and id < ${id}`) as [
          { n: number },
        ];
      const listPage = Math.floor(n / 100);
      const pagedPath = `${listPath}&page=${listPage}`;
      await call(lab, `/products/${id}`); // cached now (except none)
      await call(lab, pagedPath);
      const priceCents = 100 + Math.floor(Math.random() * 1_000_000);
      const updated = await call(lab, `/products/${id}`, put({ priceCents, name: `renamed ${id}` }));
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({
        id,
        priceCents,
        name: `renamed ${id}`,
        version: (before.version as number) + 1,
      });
      const after = await call(lab, `/products/${id}`);
      expect(after.body).toEqual(updated.body);
      expect(after.body).toEqual((await dbRows([id])).get(id));
      const list = (await call(lab, pagedPath)).body as { items: { id: number }[] };
      expect(list.items.find((item) => item.id === id)).toEqual(updated.body as { id: number });
    });

    test(`${strategy}: bad ids, parameters and bodies get 400 or 404, never 5xx`, async () => {
      const cases: [string, RequestInit | undefined, number][] = [
        ["/products/0", undefined, 400],
        ["/products/-1", undefined, 400],
        ["/products/abc", undefined, 400],
        ["/products/1.5", undefined, 400],
        ["/products/007", undefined, 400],
        ["/products/2147483648", undefined, 400],
        ["/products/99999999999999999999", undefined, 400],
        [`/products/${PLAN.rows + 1}`, undefined, 404],
        ["/products/2147483647", undefined, 404],
        ["/products", undefined, 400],
        ["/products?category=abc", undefined, 400],
        ["/products?category=1&size=0", undefined, 400],
        ["/products?category=1&size=101", undefined, 400],
        ["/products?category=1&page=-1", undefined, 400],
        ["/products?category=1&colour=red", undefined, 400],
        ["/products/1", put("{not json"), 400],
        ["/products/1", put([]), 400],
        ["/products/1", put({}), 400],
        ["/products/1", put(null), 400],
        ["/products/1", put({ stock: -1 }), 400],
        ["/products/1", put({ stock: 1.5 }), 400],
        ["/products/1", put({ priceCents: "5" }), 400],
        ["/products/1", put({ name: "  " }), 400],
        ["/products/1", put({ stock: 1, colour: "red" }), 400],
        ["/products/1", put('{"stock":1}', "text/plain"), 400],
        ["/products/abc", put({ stock: 1 }), 400],
        [`/products/${PLAN.rows + 1}`, put({ stock: 1 }), 404],
        ["/nothing/here", undefined, 404],
        ["/products/1/extra", undefined, 404],
      ];
      const before = lab.stats();
      for (const [path, init, status] of cases) {
        const response = await call(lab, path, init);
        expect({ path, init: init?.body, status: response.status }).toEqual({
          path,
          init: init?.body,
          status,
        });
        expect(response.body).toHaveProperty("error");
      }
      // Every /products request counts, turned away before its handler (a body that does not parse, no such
      // route) or by it; other paths do not.
      const products = cases.filter(([path]) => path.startsWith("/products")).length;
      expect(lab.stats().requests - before.requests).toBe(products);
      expect(lab.stats().probes - before.probes).toBe(0);
      await call(lab, `${PROBE_PREFIX}/products/1`, put("{not json"));
      expect(lab.stats().probes - before.probes).toBe(1);
      expect(lab.stats().requests - before.requests).toBe(products);
    });

    test(`${strategy}: /stats counts requests, database queries and per-tier hits`, async () => {
      const before = lab.stats();
      await call(lab, "/products/42");
      await call(lab, "/products/42");
      await call(lab, "/health");
      const after = lab.stats();
      expect(after.requests - before.requests).toBe(2);
      const caches = strategy !== "none";
      expect(after.dbQueries - before.dbQueries).toBeLessThanOrEqual(caches ? 1 : 2);
      if (strategy === "none") expect(after.dbQueries - before.dbQueries).toBe(2);
      // A hit in any tier: tracking's second read is an L2 hit (its L1 takes a value only from one).
      const hits = (s: typeof after) => Object.values(s.tiers).reduce((sum, tier) => sum + tier.hits, 0);
      if (caches) expect(hits(after) - hits(before)).toBeGreaterThanOrEqual(1);
      expect(after.cacheErrors).toBe(0);
    });

    test(`${strategy}: /stats counts reads, their queries, writes and distinct keys; probes stay apart`, async () => {
      const windowed = (await call(lab, "/stats/window", adminPost())).body as ServerStats;
      expect(windowed.requests).toBe(lab.stats().requests);
      expect(lab.stats().distinctKeys).toBe(0);
      const before = lab.stats();
      for (const path of [
        "/products/7",
        "/products/7",
        "/products/8",
        "/products?category=3&page=1&size=5",
      ]) {
        await call(lab, path);
      }
      await call(lab, "/products/0"); // a 400: a request, not a read
      await call(lab, "/products/9", put({ stock: 1 }));
      // The probe's PUT invalidates 11, so its GET must load: two queries, both counted apart.
      await call(lab, `${PROBE_PREFIX}/products/11`, put({ stock: 2 }));
      await call(lab, `${PROBE_PREFIX}/products/11`);
      await call(lab, `${PROBE_PREFIX}/products?category=3&page=1&size=5`); // a hit or a load, never a read
      const after = lab.stats();
      const delta = (name: keyof ServerStats) => (after[name] as number) - (before[name] as number);
      expect(delta("requests")).toBe(6);
      expect(delta("reads")).toBe(4);
      expect(delta("writes")).toBe(1);
      expect(delta("probes")).toBe(3);
      expect(delta("probeDbQueries")).toBeGreaterThanOrEqual(2);
      expect(delta("probeDbQueries")).toBeLessThanOrEqual(3);
      // The second read of 7 is a hit for every cache (earlier tests may have cached the others).
      if (strategy === "none") expect(delta("readDbQueries")).toBe(4);
      else expect(delta("readDbQueries")).toBeLessThanOrEqual(3);
      expect(delta("dbQueries")).toBe(delta("readDbQueries") + 1);
      expect(after.distinctKeys).toBe(3); // 7, 8 and one list page; never the probe's 11
    });
  });
}

// Row locks still held, released by `releaseLocks` even when a test fails half-way (or the next test would
// wait on them, and on the test pool's connections they hold).
const heldLocks = new Set<() => Promise<void>>();

async function releaseLocks(): Promise<void> {
  await Promise.all([...heldLocks].map((release) => release()));
}

/**
 * Takes the row lock on `id` in a transaction of the test's own, held until `release()`: a PUT of that row
 * then waits inside Postgres, holding its database slot in the server, for as long as the test wants.
 */
async function lockRow(id: number): Promise<() => Promise<void>> {
  const { promise: released, resolve: unlock } = Promise.withResolvers<void>();
  const { promise: locked, resolve: onLocked } = Promise.withResolvers<void>();
  const done = sql.begin(async (tx) => {
    await tx`select id from products where id = ${id} for update`;
    onLocked();
    await released;
  });
  const release = async () => {
    heldLocks.delete(release);
    unlock();
    await done;
  };
  heldLocks.add(release);
  await Promise.race([locked, done]);
  return release;
}

/**
 * Locks row `id`, then sends `send` (a PUT of that row) and waits until Postgres shows it blocked on the
 * lock: from then on the server's one connection is busy until the returned release.
 */
async function holdDbSlot(
  strategy: string,
  id: number,
  send: () => Promise<Response>,
): Promise<{ put: Promise<Response>; release: () => Promise<void> }> {
  const release = await lockRow(id);
  const put = send();
  const blocked = await eventually(async () => {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where application_name = ${`cachelab-${strategy}`} and wait_event_type = 'Lock'`;
    return (row?.n ?? 0) >= 1;
  }, 5_000);
  expect(blocked).toBe(true);
  return { put, release };
}

/** `count` distinct product ids in 1..PLAN.rows, none in `avoid`. */
function distinctIds(count: number, avoid: number[] = []): number[] {
  const ids = new Set<number>();
  while (ids.size < count) {
    const id = 1 + Math.floor(Math.random() * PLAN.rows);
    if (!avoid.includes(id)) ids.add(id);
  }
  return [...ids];
}

type Answer = { path: string; method: string; status: number; retryAfter: string | null; body: unknown };

async function answer(path: string, method: string, response: Promise<Response>): Promise<Answer> {
  const settled = await response;
  const text = await settled.text();
  return {
    path,
    method,
    status: settled.status,
    retryAfter: settled.headers.get("retry-after"),
    body: JSON.parse(text),
  };
}

/** A 503 the gate sent: an integer Retry-After ≥ 1 and a JSON problem naming the bound that shed it. */
function expectShed(shed: Answer, retryAfter: string, bound: string): void {
  expect(shed.status).toBe(503);
  expect(shed.retryAfter).toBe(retryAfter);
  expect(shed.body).toEqual({ error: expect.stringContaining(bound), retryAfterS: Number(retryAfter) });
}

/** Every 200 in `answers` equals the database: a detail its row, a PUT its row with the new stock. */
async function expectCorrectBodies(answers: Answer[], stock: number): Promise<void> {
  const ok = answers.filter((a) => a.status === 200);
  const ids = ok.map((a) => Number(a.path.split("/")[2]));
  const rows = await dbRows(ids);
  for (const [i, a] of ok.entries()) {
    expect({ path: a.path, body: a.body }).toEqual({ path: a.path, body: rows.get(ids[i] as number) });
    if (a.method === "PUT") expect(a.body).toMatchObject({ stock });
  }
}

describe("database admission gate", () => {
  function gateConfig(strategy: ServerConfig["strategy"], queueMax: number, timeoutMs: number): ServerConfig {
    return { ...configFor(strategy), pgPoolMax: 1, pgQueueMax: queueMax, pgAcquireTimeoutMs: timeoutMs };
  }

  const labs = new Set<ProductServer>();
  // Also after a failed or timed-out test: locks first, so the labs' blocked queries can finish.
  afterEach(async () => {
    await releaseLocks();
    await Promise.all([...labs].map((lab) => lab.close()));
    labs.clear();
  });

  async function withLab(config: ServerConfig, run: (lab: ProductServer) => Promise<void>): Promise<void> {
    const lab = createServer(config);
    labs.add(lab);
    expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
    await run(lab);
  }

  /** 8 detail GETs, a list page and a PUT, sent at once; their answers. */
  function burst(lab: ProductServer, ids: number[], stock: number): Promise<Answer[]> {
    const [putId, ...getIds] = ids as [number, ...number[]];
    const requests: [string, string, RequestInit | undefined][] = [
      ...getIds.map((id): [string, string, undefined] => [`/products/${id}`, "GET", undefined]),
      [`/products?category=${1 + (putId % 50)}&page=3&size=7`, "GET", undefined],
      [`/products/${putId}`, "PUT", put({ stock })],
    ];
    return Promise.all(
      requests.map(([path, method, init]) =>
        answer(path, method, lab.app.handle(new Request(`http://localhost${path}`, init))),
      ),
    );
  }

  for (const strategy of STRATEGY_NAMES) {
    test(`${strategy}: with PG_POOL_MAX=1 and PG_QUEUE_MAX=1 a burst past the bound gets 503s, counted as shed; the rest are right`, async () => {
      await withLab(gateConfig(strategy, 1, 0), async (lab) => {
        const [lockedId, ...ids] = distinctIds(10);
        const stock = 1 + Math.floor(Math.random() * 1_000);
        const before = lab.stats();
        expect(before).toMatchObject({ shed: 0, dbWaiting: 0, dbWaitingPeak: 0, dbInFlight: 0 });
        const held = await holdDbSlot(strategy, lockedId as number, () =>
          lab.app.handle(new Request(`http://localhost/products/${lockedId}`, put({ stock }))),
        );
        expect(lab.stats().dbInFlight).toBe(1);
        const answers = burst(lab, ids, stock);
        // One query may wait; the other nine are refused at once, before the lock goes.
        expect(await eventually(() => lab.stats().shed === 9, 5_000)).toBe(true);
        expect(lab.stats()).toMatchObject({ dbWaiting: 1, dbWaitingPeak: 1, dbInFlight: 1 });
        await held.release();
        expect((await answer(`/products/${lockedId}`, "PUT", held.put)).status).toBe(200);
        const settled = await answers;
        const shed = settled.filter((a) => a.status === 503);
        expect(shed.length).toBe(9);
        for (const a of shed) expectShed(a, "1", "PG_QUEUE_MAX");
        expect(settled.filter((a) => a.status === 200).length).toBe(1);
        await expectCorrectBodies(
          settled.filter((a) => !a.path.includes("?")),
          stock,
        );
        const list = settled.find((a) => a.path.includes("?") && a.status === 200);
        if (list) expect((list.body as { items: unknown[] }).items.length).toBe(7);
        const after = lab.stats();
        const delta = (name: keyof ServerStats) => (after[name] as number) - (before[name] as number);
        const answeredReads = settled.filter((a) => a.method === "GET" && a.status === 200).length;
        expect(delta("shed")).toBe(shed.length);
        expect(delta("requests")).toBe(11);
        // A shed read is neither a read nor a read's query: the hit ratio covers the reads answered.
        expect(delta("reads")).toBe(answeredReads);
        expect(delta("readDbQueries")).toBe(answeredReads);
        expect(delta("writes")).toBe(
          1 + settled.filter((a) => a.method === "PUT" && a.status === 200).length,
        );
        expect(after).toMatchObject({ dbWaiting: 0, dbWaitingPeak: 1, dbInFlight: 0 });
        // And it keeps serving: every id of the burst now answers its row (one at a time: the bound holds).
        const again: Answer[] = [];
        for (const id of ids) {
          const path = `/products/${id}`;
          again.push(await answer(path, "GET", lab.app.handle(new Request(`http://localhost${path}`))));
        }
        expect(again.map((a) => a.status)).toEqual(ids.map(() => 200));
        await expectCorrectBodies(again, stock);
      });
    });

    test(`${strategy}: a request queued past PG_ACQUIRE_TIMEOUT_MS gets 503 at about that time; the shed load is not cached`, async () => {
      await withLab(gateConfig(strategy, 0, 250), async (lab) => {
        const [lockedId, id] = distinctIds(2) as [number, number];
        const held = await holdDbSlot(strategy, lockedId, () =>
          lab.app.handle(new Request(`http://localhost/products/${lockedId}`, put({ stock: 1 }))),
        );
        const before = lab.stats();
        const startedMs = performance.now();
        // Three reads of one id: one shared flight in the caches, three queued queries in none.
        const answers = await Promise.all(
          [0, 1, 2].map(() =>
            answer(`/products/${id}`, "GET", lab.app.handle(new Request(`http://localhost/products/${id}`))),
          ),
        );
        const elapsedMs = performance.now() - startedMs;
        expect(elapsedMs).toBeGreaterThanOrEqual(240);
        expect(elapsedMs).toBeLessThan(1_000);
        for (const a of answers) expectShed(a, "1", "PG_ACQUIRE_TIMEOUT_MS");
        const after = lab.stats();
        expect(after.shed - before.shed).toBe(3);
        expect(after.reads - before.reads).toBe(0);
        expect(after.readDbQueries - before.readDbQueries).toBe(0);
        expect(after).toMatchObject({ dbWaiting: 0, dbInFlight: 1 });
        expect(after.dbWaitingPeak).toBe(strategy === "none" ? 3 : 1);
        await held.release();
        expect((await held.put).status).toBe(200);
        const reread = await answer(
          `/products/${id}`,
          "GET",
          lab.app.handle(new Request(`http://localhost/products/${id}`)),
        );
        expect(reread.status).toBe(200);
        expect(reread.body).toEqual((await dbRows([id])).get(id));
        expect(lab.stats().readDbQueries - after.readDbQueries).toBe(1);
      });
    });

    test(`${strategy}: with the gate off, the same burst waits for the database and gets no 503`, async () => {
      await withLab({ ...configFor(strategy), pgPoolMax: 1, pgAcquireTimeoutMs: 0 }, async (lab) => {
        const [lockedId, ...ids] = distinctIds(10);
        const stock = 1 + Math.floor(Math.random() * 1_000);
        const held = await holdDbSlot(strategy, lockedId as number, () =>
          lab.app.handle(new Request(`http://localhost/products/${lockedId}`, put({ stock }))),
        );
        const answers = burst(lab, ids, stock);
        // Nothing refuses them: every query waits behind the locked PUT (pipelined by postgres.js).
        expect(
          await Promise.race([answers.then(() => "answered"), Bun.sleep(300).then(() => "waiting")]),
        ).toBe("waiting");
        expect(lab.stats()).toMatchObject({
          shed: 0,
          dbWaiting: null,
          dbWaitingPeak: null,
          dbInFlight: null,
        });
        await held.release();
        expect((await held.put).status).toBe(200);
        const settled = await answers;
        expect(settled.map((a) => a.status)).toEqual(settled.map(() => 200));
        await expectCorrectBodies(
          settled.filter((a) => !a.path.includes("?")),
          stock,
        );
        expect(lab.stats().shed).toBe(0);
      });
    });
  }
});

describe("server on each Redis client", () => {
  /** What /stats.redisClient must say: the client, then what Redis answered HELLO with, then the settings. */
  // One Redis: node-redis is the cluster's client only (server/redis_cluster_test.ts runs the cluster's).
  const SINGLE_CLIENTS = REDIS_CLIENTS.filter((client) => client !== "node-redis");
  const described: Record<(typeof SINGLE_CLIENTS)[number], RegExp> = {
    ioredis:
      /^ioredis 6\.\d+\.\d+ resp3 redis=\d+\.\d+\.\d+ autopipelining=off commandTimeout=100ms offlineQueue=off retriesPerRequest=0 breaker=3failures\/1000ms$/,
    bun: new RegExp(
      `^bun ${Bun.version.replaceAll(".", "\\.")} RedisClient resp3 redis=\\d+\\.\\d+\\.\\d+ autopipelining=on commandTimeout=100ms\\(raced\\) offlineQueue=off autoReconnect=off\\(on demand\\) connectTimeout=1000ms breaker=3failures/1000ms$`,
    ),
  };

  for (const redisClient of SINGLE_CLIENTS) {
    for (const strategy of ["redis", "two_tier"] as const) {
      test(`${strategy} on REDIS_CLIENT=${redisClient}: /stats.redisClient names what Redis negotiated, and a second read is a cache hit`, async () => {
        const lab = createServer({ ...configFor(strategy), redisClient });
        try {
          expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
          const before = (await call(lab, "/stats")).body as ServerStats;
          const first = await call(lab, "/products/42");
          const second = await call(lab, "/products/42");
          const after = (await call(lab, "/stats")).body as ServerStats;
          expect(first.status).toBe(200);
          expect(second.body).toEqual(first.body);
          const hits = (s: ServerStats) => Object.values(s.tiers)[0]?.hits ?? 0;
          expect({
            redisClient: after.redisClient,
            hits: hits(after) - hits(before),
            dbQueries: after.dbQueries - before.dbQueries,
            cacheErrors: after.cacheErrors,
          }).toEqual({
            redisClient: expect.stringMatching(described[redisClient]),
            hits: 1,
            dbQueries: 1,
            cacheErrors: 0,
          });
        } finally {
          await lab.close();
        }
      });
    }
  }

  test("local on REDIS_CLIENT=bun: /stats.redisClient is null, no Redis client is created", async () => {
    const lab = createServer({ ...configFor("local"), redisClient: "bun" });
    try {
      expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
      expect(((await call(lab, "/stats")).body as ServerStats).redisClient).toBeNull();
    } finally {
      await lab.close();
    }
  });

  test("REDIS_CLIENT=bun: a two_tier server process reports Bun's client and serves a cache hit", async () => {
    const server = await startServer({
      env: {
        CACHE_STRATEGY: "two_tier",
        REDIS_CLIENT: "bun",
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: uniquePrefix("bun-client-process"),
      },
    });
    try {
      const stats = async () => (await (await fetch(`${server.url}/stats`)).json()) as ServerStats;
      expect(
        await eventually(async () => (await stats()).redisClient?.includes(" resp3 ") === true, 5_000),
      ).toBe(true);
      const first = await (await fetch(`${server.url}/products/7`)).text();
      expect(await (await fetch(`${server.url}/products/7`)).text()).toBe(first);
      const after = await stats();
      expect(after.redisClient).toMatch(described.bun);
      expect({
        l1Hits: after.tiers.l1?.hits,
        dbQueries: after.dbQueries,
        cacheErrors: after.cacheErrors,
      }).toEqual({
        l1Hits: 1,
        dbQueries: 1,
        cacheErrors: 0,
      });
    } finally {
      await server.stop();
    }
  });
});

describe("server processes", () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  /** Two instances of one strategy on one Redis prefix (L1 kept 10 minutes), and a read of one random row. */
  async function twoInstances(env: Record<string, string>, prefix: string) {
    const shared = {
      ...env,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: uniquePrefix(prefix),
      L1_TTL_MS: "600000",
    };
    const [a, b] = await Promise.all([startServer({ env: shared }), startServer({ env: shared })]);
    servers.push(a, b);
    const id = 1 + Math.floor(Math.random() * PLAN.rows);
    const read = async (server: ServerProcess) =>
      (await (await fetch(`${server.url}/products/${id}`)).json()) as { version: number };
    return { a, b, id, read };
  }

  test("two_tier: a PUT through instance A is seen through instance B within 100 ms", async () => {
    const { a, b, id, read } = await twoInstances({ CACHE_STRATEGY: "two_tier" }, "two-process");
    const { version } = await read(b);
    await read(b); // now in B's L1
    const response = await fetch(`${a.url}/products/${id}`, put({ stock: 3 }));
    expect(response.status).toBe(200);
    const startedMs = performance.now();
    expect(await eventually(async () => (await read(b)).version === version + 1, 100)).toBe(true);
    expect(performance.now() - startedMs).toBeLessThan(150);
    const stats = (await (await fetch(`${b.url}/stats`)).json()) as { invalidationsReceived: number };
    expect(stats.invalidationsReceived).toBeGreaterThanOrEqual(1);
  });

  test.each([
    ["ioredis", /^ioredis 6\.0\.0 resp3 .*tracking=on\(redirect to a RESP2 subscriber\)/],
    ["node-redis", /^node-redis 6\.3\.1 resp3 /],
  ])(
    "tracking on %s: a PUT through instance A is seen through instance B within 50 ms (Redis sends the DEL's invalidation)",
    async (client, described) => {
      const env = { CACHE_STRATEGY: "tracking", REDIS_CLIENT: client };
      const { a, b, id, read } = await twoInstances(env, "tracking-process");
      const tiers = async (server: ServerProcess) =>
        ((await (await fetch(`${server.url}/stats`)).json()) as ServerStats).tiers;
      const { version } = await read(b);
      // B's L1 holds it once a read is answered there (a load, then a Redis hit, fill it).
      const inL1 = async () => {
        await read(b);
        return ((await tiers(b)).l1?.hits ?? 0) > 0;
      };
      expect(await eventually(inL1)).toBe(true);
      const response = await fetch(`${a.url}/products/${id}`, put({ stock: 3 }));
      expect(response.status).toBe(200);
      const startedMs = performance.now();
      expect(await eventually(async () => (await read(b)).version === version + 1, 50)).toBe(true);
      expect(performance.now() - startedMs).toBeLessThan(100);
      const stats = (await (await fetch(`${b.url}/stats`)).json()) as ServerStats;
      expect(stats.invalidationsReceived).toBeGreaterThanOrEqual(1);
      expect(stats.redisClient).toMatch(described);
    },
  );

  test("server exits 0 after draining on SIGTERM", async () => {
    const server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
    expect((await fetch(`${server.url}/products/1`)).status).toBe(200);
    expect(await server.stop()).toBe(0);
    expect(server.output()).toContain("draining");
  });

  test("server exits 2 and lists the strategies for an unknown CACHE_STRATEGY", async () => {
    const proc = Bun.spawn(["bun", `${import.meta.dir}/server.ts`], {
      env: { ...process.env, CACHE_STRATEGY: "memcached" },
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain("none, local, redis, two_tier, tracking");
  });

  test("two_tier process: shed by a full queue and by the acquire timeout over HTTP, Retry-After from the timeout, and it keeps running", async () => {
    const server = await startServer({
      env: {
        CACHE_STRATEGY: "two_tier",
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: uniquePrefix("gate-process"),
        PG_POOL_MAX: "1",
        PG_QUEUE_MAX: "2",
        PG_ACQUIRE_TIMEOUT_MS: "1001",
      },
    });
    servers.push(server);
    const stats = async () => (await (await fetch(`${server.url}/stats`)).json()) as ServerStats;
    const [lockedId, shared, ...others] = distinctIds(8) as [number, number, ...number[]];
    const held = await holdDbSlot("two_tier", lockedId, () =>
      fetch(`${server.url}/products/${lockedId}`, put({ stock: 4 })),
    );
    // Three reads share one flight; six more have flights of their own: seven queries for two places.
    const paths = [shared, shared, shared, ...others].map((id) => `/products/${id}`);
    const answers = await Promise.all(
      paths.map((path) => answer(path, "GET", fetch(`${server.url}${path}`))),
    );
    // Two flights waited 1 001 ms and were shed too: every read got 503, Retry-After ⌈1.001⌉ = 2 s.
    for (const a of answers) expect(a.status).toBe(503);
    const bounds = answers.map((a) =>
      (a.body as { error: string }).error.includes("PG_QUEUE_MAX") ? "q" : "t",
    );
    expect(bounds.filter((b) => b === "t").length).toBeGreaterThanOrEqual(2); // the two queued flights
    for (const [i, a] of answers.entries()) {
      expectShed(a, "2", bounds[i] === "q" ? "PG_QUEUE_MAX" : "PG_ACQUIRE_TIMEOUT_MS");
    }
    expect(await stats()).toMatchObject({ shed: 9, dbWaiting: 0, dbWaitingPeak: 2, dbInFlight: 1 });
    await held.release();
    expect((await held.put).status).toBe(200);
    const reread = await answer(`/products/${shared}`, "GET", fetch(`${server.url}/products/${shared}`));
    expect(reread.body).toEqual((await dbRows([shared])).get(shared));
    expect(await stats()).toMatchObject({ shed: 9, dbWaiting: 0, dbInFlight: 0 });
    expect(await server.stop()).toBe(0);
    expect(server.output()).not.toContain("unhandled rejection");
  });

  test("server exits 2 naming PG_QUEUE_MAX when it is not an integer in range", async () => {
    const proc = Bun.spawn(["bun", `${import.meta.dir}/server.ts`], {
      env: { ...process.env, PG_QUEUE_MAX: "-3" },
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain("Cannot read PG_QUEUE_MAX");
  });

  test("startServer refuses a port that is already taken", async () => {
    const server = await startServer({ env: { CACHE_STRATEGY: "none", DATABASE_URL: databaseUrl } });
    servers.push(server);
    await expect(startServer({ env: { CACHE_STRATEGY: "none" }, port: server.port })).rejects.toThrow(
      "already taken",
    );
  });
});

describe("identity and reset (GET /info, POST /admin/reset): what a lab that did not start the server uses", () => {
  const cases = [
    ["local", "ioredis"],
    ["redis", "ioredis"],
    ["redis", "bun"],
    ["two_tier", "bun"],
    ["tracking", "ioredis"], // REDIS_CLIENT names redis's and two_tier's client: tracking's is node-redis
  ] as const;
  for (const [strategy, redisClient] of cases) {
    test(`${strategy} on ${redisClient}: /info names its settings, database and Redis; a reset forgets a cached row and deletes its Redis keys`, async () => {
      const config = { ...configFor(strategy), redisClient };
      const lab = createServer(config);
      const { Redis } = await import("ioredis");
      const redis = new Redis(redisUrl, { lazyConnect: true });
      const id = 77;
      try {
        expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
        const info = (await call(lab, "/info")).body as import("./server/lab_routes.ts").ServerInfo;
        const [mine] = await sql<{ name: string }[]>`select current_database() as name`;
        const runId = runIdOf(await redis.info("server"));
        expect(info).toMatchObject({
          strategy,
          settings: { cacheTtlMs: config.cacheTtlMs, pgPoolMax: config.pgPoolMax, redisClient },
          database: { name: mine?.name },
          redis: strategy === "local" ? null : { runId },
        });
        const before = (await call(lab, `/products/${id}`)).body as { version: number };
        // The row changes behind the cache's back: a cached copy is now stale.
        await sql`update products set version = version + 1 where id = ${id}`;
        try {
          expect(((await call(lab, `/products/${id}`)).body as { version: number }).version).toBe(
            before.version,
          );
          const keysBefore = (await redis.keys(`${config.redisKeyPrefix}*`)).length;
          const reset = await call(lab, "/admin/reset", adminPost());
          expect(reset.status).toBe(200);
          expect(reset.body).toEqual({ redisKeysRemoved: keysBefore });
          if (strategy !== "local") expect(keysBefore).toBeGreaterThan(0);
          expect(await redis.keys(`${config.redisKeyPrefix}*`)).toEqual([]);
          const after = (await call(lab, `/products/${id}`)).body as { version: number };
          expect(after.version).toBe(before.version + 1);
          const stats = (await call(lab, "/stats")).body as ServerStats;
          expect({ resets: stats.resets, cacheErrors: stats.cacheErrors }).toEqual({
            resets: 1,
            cacheErrors: 0,
          });
          expect(stats.process.cpuS).toBeGreaterThan(0);
        } finally {
          await sql`update products set version = version - 1 where id = ${id}`;
        }
      } finally {
        redis.disconnect();
        await lab.close();
      }
    });
  }
});
