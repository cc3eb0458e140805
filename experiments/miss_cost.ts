/**
 * Misses that cost what they cost: the same Zipf(1.1) stream over 2 000 products at one open
 * rate, read as a detail (one primary-key row) and as a summary (the product with its review count, average,
 * histogram and latest 5 reviews: one statement with a join and aggregates) at 10, 100 and 1 000 reviews a
 * product. The miss cost is a property of the data, measured on each row (db_load_ms_p50/p99, pg_exec_ms_mean),
 * never a sleep. A 1 s TTL (L1 0.5 s) keeps misses coming after the warm-up, so every strategy keeps paying them.
 * Question: where does caching turn from "saves the database" into "saves latency", and does redis beat none
 * once the miss is expensive?
 * Expect: the miss cost grows with the reviews (summary at 1 000 ≫ at 10 > detail); none's p50 follows it; the
 * caching strategies' p50 stays near a hit's, so the gap none − redis grows from ≈ 0 (detail: a Redis round
 * trip costs about what the primary-key query does) to a clear win for redis at 1 000 reviews; local and
 * two_tier lowest throughout. Detail reads no reviews: one detail attack is the baseline for all three.
 * Budget: four attacks × five strategies, 10 s after 3 s warm-ups, plus three reseeds (the 1 000-review one,
 * 2 000 000 reviews, takes about 7 s): about 5 minutes. `--repeats 3` for a reading to quote.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";
import type { SeedPlan } from "../seed/seed.ts";

const ROWS = 2_000;

function withReviews(reviewsPerProduct: number): SeedPlan {
  return { rows: ROWS, seed: 42, descriptionBytes: 200, reviewsPerProduct };
}

function reads(name: string, path: string, reviewsPerProduct: number): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps: 500 },
    durationS: 10,
    warmupS: 3,
    seed: withReviews(reviewsPerProduct),
    requests: [{ name, weight: 1, method: "GET", path }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
  };
}

export const experiment = {
  question:
    "Where does caching turn from saving the database into saving latency as a miss gets dearer, and does redis beat none?",
  expect:
    "miss cost summary_r1000 ≫ summary_r10 > detail; none's p50 follows it; none − redis grows from ≈ 0 (detail) to a clear redis win at 1 000 reviews",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 1,
  tools: ["vegeta", "k6", "oha"],
  seed: withReviews(10),
  server: { cacheTtlMs: 1_000, l1TtlMs: 500 },
  attacks: [
    reads("detail", "/products/{id}", 10),
    reads("summary_r10", "/products/{id}/summary", 10),
    reads("summary_r100", "/products/{id}/summary", 100),
    reads("summary_r1000", "/products/{id}/summary", 1_000),
  ],
} satisfies Experiment;

// A script too: `bun experiments/miss_cost.ts [options]` is `bun run experiment miss_cost [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
