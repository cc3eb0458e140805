/**
 * Read-heavy hot keys (answers the write-ups that ran k6 with sleep(0.1), capping every mode at one rate, or vegeta on three fixed URLs): Zipf(1.1) reads over 100 000 products at a fixed arrival
 * rate, three interleaved repeats.
 * Question: how much database load does each strategy remove, and at what p50/p99 cost?
 * Expect: db queries none ≫ redis > two_tier ≈ tracking ≈ local; p99 local ≈ two_tier ≈ tracking < redis < none. Unlike the seed's
 * in-process H2 run, Postgres is a separate server here, so none cannot beat redis on a miss-free path.
 */
import type { Experiment } from "../lab/plan/experiment_plan.ts";

export const experiment = {
  question: "How much DB load does each strategy remove for Zipf reads, and at what p50/p99?",
  expect:
    "db queries none ≫ redis > two_tier ≈ tracking ≈ local; p99 local ≈ two_tier ≈ tracking < redis < none",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "oha", "k6"],
  attacks: [
    {
      name: "zipf_reads",
      model: { kind: "open", rateRps: 3_000 },
      durationS: 30,
      warmupS: 10,
      requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/read_heavy.ts [options]` is `bun run experiment read_heavy [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
