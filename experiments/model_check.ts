/**
 * The model checked: a grid of added miss cost (0, 2, 10 ms per database round trip) × added Redis round
 * trip (0, 1 ms) × body size (the seed's default, 4 KB, 16 KB), every strategy, at a fixed moderate arrival
 * rate. Postgres and Redis are reached through Toxiproxy in every attack, so the proxy's own cost is in all
 * of them; each body size's `<body>_m0_r0_base` adds nothing and is the model's base for that body: every
 * other row's `predicted_mean_ms` and `predicted_p99_ms` come from its tier costs and histograms plus the
 * model's terms for what the row adds (lab/model/predict.ts, docs/card.md), never from the row's own.
 * Question: does the model predict each strategy's server-side mean and p99, and the ranking, for numbers it
 * did not measure?
 * Expect: every row's mean within 25% of its prediction and its p99 within 35%, or flagged outside the model
 * with the reason; the predicted ranking is the measured one in every attack. A larger body makes a Redis
 * round trip dearer (its bytes cross the proxy twice), which the body's own base carries.
 * Budget: 18 attacks × 5 strategies × 2 repeats of a 1 s warm-up and 4 s measured: about 20 minutes.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";
import type { SeedPlan } from "../seed/seed.ts";

const MISS_COSTS_MS = [0, 2, 10];
const REDIS_RTTS_MS = [0, 1];
/** Body sizes: the seed's own (about 330 B), 4 KB and 16 KB, each exact to the byte (seed/payload.ts). */
const BODIES: { name: string; bytes: number | null }[] = [
  { name: "body", bytes: null },
  { name: "kb4", bytes: 4_096 },
  { name: "kb16", bytes: 16_384 },
];

function seedOf(bytes: number | null): SeedPlan {
  const seed: SeedPlan = { rows: 2_000, seed: 42, descriptionBytes: 200 };
  return bytes === null ? seed : { ...seed, payloadBytes: { kind: "fixed", bytes } };
}

function attack(body: (typeof BODIES)[number], missCostMs: number, redisRttMs: number): ExperimentAttack {
  const name = `${body.name}_m${missCostMs}_r${redisRttMs}`;
  return {
    name: missCostMs === 0 && redisRttMs === 0 ? `${name}_base` : name,
    model: { kind: "open", rateRps: 1_000 },
    durationS: 4,
    warmupS: 1,
    seed: seedOf(body.bytes),
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    // Half each way: a round trip gains the whole figure.
    network: { postgres: { latencyMs: missCostMs / 2 }, redis: { latencyMs: redisRttMs / 2 } },
  };
}

export const experiment = {
  question:
    "Does the model predict each strategy's server-side mean and p99, and their ranking, for a miss cost, a Redis round trip and a body size it did not measure?",
  expect:
    "every row's mean within 25% of its prediction and its p99 within 35% (or flagged outside the model); the predicted ranking is the measured one",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 2,
  seed: seedOf(null),
  tools: ["vegeta", "k6"],
  // Each body size is its own base: a hit's cost grows with its bytes, which the model does not scale.
  modelBase: (name: string) => `${name.split("_")[0]}_m0_r0_base`,
  attacks: BODIES.flatMap((body) =>
    MISS_COSTS_MS.flatMap((missCostMs) =>
      REDIS_RTTS_MS.map((redisRttMs) => attack(body, missCostMs, redisRttMs)),
    ),
  ),
} satisfies Experiment;

// A script too: `bun experiments/model_check.ts [options]` is `bun run experiment model_check [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
