import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { eventually, testDatabaseUrl, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import type { SeedPlan } from "../seed/seed.ts";
import { createServer, type ProductServer } from "../server.ts";
import { DEFAULT_CONFIG, PG_DRIVERS, PROBE_PREFIX, STRATEGY_NAMES } from "../server_config.ts";
import type { ServerStats } from "./meter.ts";

const PLAN: SeedPlan = { rows: 300, seed: 42, descriptionBytes: 50, reviewsPerProduct: 7 };
let databaseUrl: string;
let redisUrl: string;
let sql: postgres.Sql;

beforeAll(async () => {
  databaseUrl = await testDatabaseUrl(PLAN, "reviews_test");
  redisUrl = (await testServices()).redisUrl;
  sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql.end();
});

/** The summary computed straight from the tables in separate plain queries, not the route's statement. */
async function expectedSummary(id: number): Promise<Record<string, unknown>> {
  const [product] = await sql`select * from products where id = ${id}`;
  const ratings = await sql<{ rating: number }[]>`select rating from reviews where product_id = ${id}`;
  const latest = await sql<{ id: number; rating: number; body: string; created_at: Date }[]>`
    select id, rating, body, created_at from reviews where product_id = ${id} order by created_at desc limit 5`;
  if (!product) throw new Error(`no product ${id}`);
  const sum = ratings.reduce((total, row) => total + row.rating, 0);
  return {
    id: product.id,
    name: product.name,
    categoryId: product.category_id,
    priceCents: product.price_cents,
    stock: product.stock,
    description: product.description,
    version: product.version,
    updatedAt: (product.updated_at as Date).toISOString(),
    reviewCount: ratings.length,
    averageRating: ratings.length === 0 ? null : Math.round((sum / ratings.length) * 100) / 100,
    ratingHistogram: [1, 2, 3, 4, 5].map((stars) => ratings.filter((row) => row.rating === stars).length),
    latestReviews: latest.map((row) => ({
      id: row.id,
      rating: row.rating,
      body: row.body,
      createdAt: row.created_at.toISOString(),
    })),
  };
}

async function get(lab: ProductServer, path: string): Promise<{ status: number; body: unknown }> {
  const response = await lab.app.handle(new Request(`http://localhost${path}`));
  return { status: response.status, body: JSON.parse(await response.text()) };
}

async function stats(lab: ProductServer): Promise<ServerStats> {
  return (await get(lab, "/stats")).body as ServerStats;
}

for (const [strategy, pgDriver] of PG_DRIVERS.flatMap((driver) =>
  STRATEGY_NAMES.map((name) => [name, driver] as const),
)) {
  describe(`summary route with ${strategy} on ${pgDriver}`, () => {
    let lab: ProductServer;
    beforeAll(async () => {
      lab = createServer({
        ...DEFAULT_CONFIG,
        strategy,
        pgDriver,
        databaseUrl,
        redisUrl,
        redisKeyPrefix: uniquePrefix(`summary-${strategy}`),
      });
      expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
    });
    afterAll(async () => {
      await lab.close();
    });

    test(`${strategy}: GET /products/:id/summary equals the summary computed from the tables, on a miss and a hit`, async () => {
      for (const id of [1, 2, 150, 300]) {
        const expected = await expectedSummary(id);
        const before = await stats(lab);
        expect(await get(lab, `/products/${id}/summary`)).toEqual({ status: 200, body: expected });
        expect(await get(lab, `/products/${id}/summary`)).toEqual({ status: 200, body: expected });
        const after = await stats(lab);
        // A caching strategy loads once; `none` loads each time. Each load is timed as a summary load.
        const loads = strategy === "none" ? 2 : 1;
        expect(after.readDbQueries - before.readDbQueries).toBe(loads);
        expect(after.dbLoadMs.summary.count - before.dbLoadMs.summary.count).toBe(loads);
      }
    });

    test(`${strategy}: a PUT to the product invalidates its summary and its detail`, async () => {
      const id = 42;
      await get(lab, `/products/${id}/summary`);
      await get(lab, `/products/${id}`);
      const name = `renamed ${strategy} ${crypto.randomUUID().slice(0, 6)}`;
      const put = await lab.app.handle(
        new Request(`http://localhost/products/${id}`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name }),
        }),
      );
      expect(put.status).toBe(200);
      const summary = await get(lab, `/products/${id}/summary`);
      expect(summary).toEqual({ status: 200, body: await expectedSummary(id) });
      expect((summary.body as { name: string }).name).toBe(name);
      expect(((await get(lab, `/products/${id}`)).body as { name: string }).name).toBe(name);
    });

    test(`${strategy}: a bad id gets 400 and an unknown id 404, on the route and its probe`, async () => {
      for (const prefix of ["", PROBE_PREFIX]) {
        expect(await get(lab, `${prefix}/products/abc/summary`)).toEqual({
          status: 400,
          body: { error: "id must be an integer in 1..2147483647" },
        });
        expect(await get(lab, `${prefix}/products/0/summary`)).toMatchObject({ status: 400 });
        expect(await get(lab, `${prefix}/products/999999/summary`)).toEqual({
          status: 404,
          body: { error: "product not found" },
        });
      }
    });

    test(`${strategy}: the probe route answers the same summary, counted as a probe and not timed`, async () => {
      const before = await stats(lab);
      expect(await get(lab, `${PROBE_PREFIX}/products/7/summary`)).toEqual({
        status: 200,
        body: await expectedSummary(7),
      });
      const after = await stats(lab);
      expect(after.probes - before.probes).toBe(1);
      expect(after.requests - before.requests).toBe(0);
      expect(after.dbLoadMs.summary.count).toBe(before.dbLoadMs.summary.count);
    });
  });
}

test("a product without reviews has a zero count, a null average, an empty histogram and no latest reviews", async () => {
  const lab = createServer({ ...DEFAULT_CONFIG, strategy: "none", databaseUrl, redisUrl });
  try {
    await sql`delete from reviews where product_id = 299`;
    const { body } = await get(lab, "/products/299/summary");
    expect(body).toMatchObject({
      id: 299,
      reviewCount: 0,
      averageRating: null,
      ratingHistogram: [0, 0, 0, 0, 0],
      latestReviews: [],
    });
  } finally {
    await lab.close();
    // The next run's testDatabaseUrl sees the missing reviews and reseeds.
  }
});

test("/stats dbLoadMs times detail, summary and list loads apart, and POST /admin/reset starts them over", async () => {
  const lab = createServer({ ...DEFAULT_CONFIG, strategy: "none", databaseUrl, redisUrl });
  try {
    await get(lab, "/products/5");
    await get(lab, "/products/5/summary");
    await get(lab, "/products?category=3");
    const timed = (await stats(lab)).dbLoadMs;
    for (const kind of ["detail", "summary", "list"] as const) {
      expect(timed[kind].count).toBe(1);
      expect(timed[kind].p50Ms).toBeGreaterThan(0);
      expect(timed[kind].buckets).toHaveLength(1);
    }
    await lab.reset();
    expect((await stats(lab)).dbLoadMs.summary).toEqual({
      count: 0,
      sumMs: 0,
      meanMs: null,
      p50Ms: null,
      p99Ms: null,
      buckets: [],
    });
  } finally {
    await lab.close();
  }
});
