/**
 * The model checked: a grid of added miss cost (0, 2, 10 ms per database round trip) × added Redis round
 * trip (0, 1 ms), every strategy, at a fixed moderate arrival rate. Postgres and Redis are reached through
 * Toxiproxy in every attack, so the proxy's own cost is in all of them; `m0_r0_base` adds nothing and is the
 * model's base: every other row's `predicted_mean_ms` comes from its tier costs plus the model's terms for
 * what the row adds (lab/model/predict.ts, docs/card.md), never from the row's own means.
 * Question: does the model predict each strategy's server-side mean, and the ranking, for numbers it did not
 * measure?
 * Expect: every row within 25% of its prediction; the predicted ranking is the measured one in every attack:
 * none pays the miss cost on every read, redis a Redis round trip on every hit and two on every miss, local
 * and two_tier the miss cost on their misses only.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

const MISS_COSTS_MS = [0, 2, 10];
const REDIS_RTTS_MS = [0, 1];

function attack(missCostMs: number, redisRttMs: number): ExperimentAttack {
  const name = `m${missCostMs}_r${redisRttMs}`;
  return {
    name: missCostMs === 0 && redisRttMs === 0 ? `${name}_base` : name,
    model: { kind: "open", rateRps: 1_000 },
    durationS: 6,
    warmupS: 2,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    // Half each way: a round trip gains the whole figure.
    network: { postgres: { latencyMs: missCostMs / 2 }, redis: { latencyMs: redisRttMs / 2 } },
  };
}

export const experiment = {
  question:
    "Does the model predict each strategy's server-side mean, and their ranking, for a miss cost and a Redis round trip it did not measure?",
  expect:
    "every row within 25% of its prediction; the predicted ranking is the measured one at every miss cost and round trip",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "k6"],
  modelBase: "m0_r0_base",
  attacks: MISS_COSTS_MS.flatMap((missCostMs) =>
    REDIS_RTTS_MS.map((redisRttMs) => attack(missCostMs, redisRttMs)),
  ),
} satisfies Experiment;

// A script too: `bun experiments/model_check.ts [options]` is `bun run experiment model_check [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
