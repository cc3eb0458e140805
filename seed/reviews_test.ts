import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { testDatabaseUrl } from "../lab/shared/testing.ts";
import { copyText, DEFAULT_SEED_PLAN } from "./product_rows.ts";
import { REVIEW_BODY_MAX_CHARS, REVIEW_BODY_MIN_CHARS, reviewsCopyText } from "./reviews.ts";
import { checkSeed, checkSeedPlan, type SeedPlan, seed, tableChecksum } from "./seed.ts";

const PLAN: SeedPlan = { rows: 300, seed: 42, descriptionBytes: 50, reviewsPerProduct: 7 };

function sha256(...texts: string[]): string {
  const hasher = new Bun.CryptoHasher("sha256");
  for (const text of texts) hasher.update(text);
  return hasher.digest("hex");
}

describe("reviewsCopyText", () => {
  test("reviewsCopyText review k of product p does not depend on where a chunk starts", () => {
    const whole = reviewsCopyText(PLAN as Required<SeedPlan>, 1, 20).split("\n");
    const tail = reviewsCopyText(PLAN as Required<SeedPlan>, 11, 20).split("\n");
    expect(tail).toEqual(whole.slice(10 * 7));
  });

  test("reviewsCopyText rows have the planned shape: ids 1..R per product, ratings 1..5, bodies 40..199 chars", () => {
    const lines = reviewsCopyText({ seed: 42, reviewsPerProduct: 50 }, 1, 100).trimEnd().split("\n");
    expect(lines).toHaveLength(5_000);
    const ratings = new Set<string>();
    for (const [index, line] of lines.entries()) {
      const [productId, id, rating, body, createdAt] = line.split("\t") as [string, ...string[]];
      expect(Number(productId)).toBe(1 + Math.floor(index / 50));
      expect(Number(id)).toBe(1 + (index % 50));
      expect(["1", "2", "3", "4", "5"]).toContain(rating as string);
      ratings.add(rating as string);
      expect(body?.length).toBeGreaterThanOrEqual(REVIEW_BODY_MIN_CHARS);
      expect(body?.length).toBeLessThanOrEqual(REVIEW_BODY_MAX_CHARS);
      expect(createdAt).toMatch(/^2024-\d\d-\d\d \d\d:\d\d:\d\d\+00$/);
    }
    expect(ratings.size).toBe(5);
  });

  test("the default plan's products are what main seeded before reviews existed (checksum pinned from main)", () => {
    // Computed on main at 55d6336, before this change: the default dataset and its checksum must not move.
    const hasher = new Bun.CryptoHasher("sha256");
    for (let from = 1; from <= DEFAULT_SEED_PLAN.rows; from += 5_000) {
      hasher.update(copyText(DEFAULT_SEED_PLAN, from, Math.min(DEFAULT_SEED_PLAN.rows, from + 4_999)));
    }
    expect(hasher.digest("hex")).toBe("8417247ad91d0b694cbe08ff4b5d31d99a6e1dd5048561065aab456e562e8ff2");
  });

  test("checkSeedPlan bounds reviewsPerProduct by the reviews in all, naming the field", () => {
    expect(() => checkSeedPlan({ ...PLAN, reviewsPerProduct: -1 })).toThrow(
      "Cannot seed: reviewsPerProduct must be an integer in 0..66666 (20000000 reviews in all): received -1",
    );
    expect(() => checkSeedPlan({ ...PLAN, rows: 100_000, reviewsPerProduct: 201 })).toThrow(
      "reviewsPerProduct must be an integer in 0..200",
    );
  });
});

describe("seed with reviews against Postgres", () => {
  let sql: postgres.Sql;
  beforeAll(async () => {
    sql = postgres(await testDatabaseUrl(PLAN, "reviews_test"), { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end();
  });

  test("seed with reviews: its checksum covers both tables, is stable across runs and the tables re-hash to it", async () => {
    const first = await seed(sql, PLAN);
    const second = await seed(sql, PLAN);
    expect(second.checksum).toBe(first.checksum);
    const products = copyText(PLAN, 1, PLAN.rows);
    const reviews = reviewsCopyText(PLAN as Required<SeedPlan>, 1, PLAN.rows);
    expect(first.checksum).toBe(sha256(products, reviews));
    expect(first.checksum).not.toBe(sha256(products));
    expect(await tableChecksum(sql, { reviews: true })).toEqual({
      rows: PLAN.rows,
      checksum: first.checksum,
    });
    expect(await checkSeed(sql, PLAN, { deep: true })).toEqual({ ok: true, checksum: first.checksum });
    const [meta] = await sql`select reviews_per_product, payload from cachelab_seed_meta`;
    expect(meta).toEqual({ reviews_per_product: 7, payload: null });
    const [{ n }] = (await sql`select count(*)::int as n from reviews`) as [{ n: number }];
    expect(n).toBe(PLAN.rows * 7);
  });

  test("without reviews the same products keep their old checksum, and checkSeed tells the two plans apart", async () => {
    const { reviewsPerProduct: _, ...withoutReviews } = PLAN;
    const plain = await seed(sql, withoutReviews);
    expect(plain.checksum).toBe(sha256(copyText(PLAN, 1, PLAN.rows)));
    const [{ n }] = (await sql`select count(*)::int as n from reviews`) as [{ n: number }];
    expect(n).toBe(0);
    expect(await checkSeed(sql, PLAN)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('"reviewsPerProduct":0'),
    });
    await seed(sql, PLAN);
    await sql`delete from reviews where product_id = 3 and id = 1`;
    expect(await checkSeed(sql, PLAN)).toMatchObject({
      ok: false,
      reason: "reviews changed since seeding (2099 of 2100)",
    });
    await seed(sql, PLAN);
    await sql`update reviews set rating = rating % 5 + 1 where product_id = 4 and id = 2`; // only the deep check sees it
    expect((await checkSeed(sql, PLAN)).ok).toBe(true);
    expect(await checkSeed(sql, PLAN, { deep: true })).toMatchObject({ ok: false });
  });

  test("bun run seed --reviews-per-product seeds them, and a bad value exits 2 naming the flag", async () => {
    const bad = Bun.spawn(["bun", `${import.meta.dir}/seed.ts`, "--reviews-per-product", "some"], {
      stderr: "pipe",
      stdout: "pipe",
    });
    expect(await bad.exited).toBe(2);
    expect(await new Response(bad.stderr).text()).toContain(
      "Cannot parse --reviews-per-product: expected a whole number: received some",
    );
  });
});
