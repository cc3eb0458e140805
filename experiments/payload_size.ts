/**
 * Payloads of real size: every product's JSON body sized to 200 B, 2 KB, 20 KB and 100 KB (1 KB =
 * 1 000 B; seed/payload.ts makes each body exact to the byte), one attack per size, the same Zipf(1.1) stream
 * over 2 000 products at one open rate. The cache stores the body as it is sent, so a hit costs what moving
 * and copying that many bytes costs: through Redis (a round trip carrying it) or in-process (local).
 * Question: what do Redis's transfer and the serialization cost each strategy in p50/p99 and server CPU as the
 * values grow?
 * Expect: at 200 B the ranking is quickstart's (local ≤ two_tier < redis < none); redis's p50 and server CPU
 * grow with the size (a 100 KB value is ~100 µs of copying and network per hit on loopback) while local's and
 * two_tier's stay nearly flat (their hits never leave the process); none grows most (Postgres reads, de-TOASTs
 * and sends every value). bytes_in grows with the size for all (the tool's received bytes).
 * Redis memory: the rows do not record Redis's used_memory; at 100 KB × 2 000 keys it is about 200 MB.
 * Budget: four attacks × five strategies, 10 s after 3 s warm-ups, plus four reseeds (the 100 KB one is
 * 200 MB of rows): about 5 minutes. `--repeats 3` for a reading to quote.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";
import type { SeedPlan } from "../seed/seed.ts";

function sized(bytes: number): SeedPlan {
  return { rows: 2_000, seed: 42, descriptionBytes: 200, payloadBytes: { kind: "fixed", bytes } };
}

function reads(name: string, bytes: number): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps: 500 },
    durationS: 10,
    warmupS: 3,
    seed: sized(bytes),
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
  };
}

export const experiment = {
  question:
    "What do Redis's transfer and the serialization cost each strategy in p50/p99 and server CPU as values grow?",
  expect:
    "200 B: local ≤ two_tier < redis < none; redis's p50 and CPU grow with the size, local's and two_tier's stay nearly flat",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 1,
  // k6 first: it discards the bodies it receives (counting their bytes); vegeta keeps every body for bytes_in,
  // and at 100 KB × 500 rps its results file (500 MB for 10 s) takes longer to encode than the run is allowed.
  tools: ["k6", "vegeta", "oha"],
  seed: sized(200),
  attacks: [reads("b200", 200), reads("kb2", 2_000), reads("kb20", 20_000), reads("kb100", 100_000)],
} satisfies Experiment;

// A script too: `bun experiments/payload_size.ts [options]` is `bun run experiment payload_size [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
