import { beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import type { SeedPlan } from "../../seed/seed.ts";
import { seedFor } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { num, runRows, testExperiment } from "./run_testing.ts";

const BASE: SeedPlan = { rows: 500, seed: 7, descriptionBytes: 64 };
const WITH_REVIEWS: SeedPlan = { ...BASE, reviewsPerProduct: 20 };
let services: Services;

beforeAll(async () => {
  // A database of its own: the run reseeds it between attacks.
  services = { ...(await testServices()), databaseUrl: await testDatabaseUrl(BASE, "seeds_test") };
});

test("seedFor takes the attack's own seed over the experiment's", () => {
  expect(seedFor({ seed: BASE }, {})).toBe(BASE);
  expect(seedFor({ seed: BASE }, { seed: WITH_REVIEWS })).toBe(WITH_REVIEWS);
});

test("an attack with a seed of its own is run on that dataset: reseeded before its cells, recorded in its rows, and its summary reads match their simulation", async () => {
  const attack = {
    model: { kind: "open" as const, rateRps: 100 },
    durationS: 1,
    warmupS: 1,
    keys: { distribution: { kind: "zipf" as const, exponent: 1.1 }, seed: 1 },
    targetCount: 1_000,
  };
  const rows = await runRows(
    testExperiment(
      [
        {
          ...attack,
          name: "detail",
          requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
        },
        {
          ...attack,
          name: "summary",
          seed: WITH_REVIEWS,
          requests: [{ name: "summary", weight: 1, method: "GET", path: "/products/{id}/summary" }],
        },
      ],
      { seed: BASE },
    ),
    { name: "seeds", services },
  );
  if (typeof rows === "string") throw new Error(rows);
  expect(rows.map((row) => [row.attack, row.reviews_per_product, row.valid, row.invalid_reason])).toEqual([
    ["detail", "0", "true", ""],
    ["summary", "20", "true", ""],
  ]);
  const summary = rows[1];
  expect(num(summary, "hit_ratio")).toBeGreaterThan(0);
  expect(num(summary, "db_load_ms_mean")).toBeGreaterThanOrEqual(num(summary, "pg_exec_ms_mean") * 0.95);
  const sql = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [meta] = await sql`select reviews_per_product from cachelab_seed_meta`;
    expect(meta?.reviews_per_product).toBe(20);
  } finally {
    await sql.end();
  }
}, 60_000);
