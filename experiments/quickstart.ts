/**
 * Quickstart: Zipf(1.1) reads over 100 000 products at a fixed arrival rate, every strategy three times,
 * interleaved (the order turned each repeat), so the card has an interval for each and its pick holds run after run.
 * Question: on this machine, what does each strategy do to latency and to the load on Postgres?
 * Expect: db queries none ≫ redis ≈ two_tier ≈ tracking ≈ local (the Zipf head is cached); p99 local ≤
 * two_tier ≈ tracking < redis < none.
 * Budget: fifteen 3 s attacks after 1 s warm-ups, a minute of load (the README's main command). Three
 * short repeats buy a pick with intervals; one long one bought a first place that the next run could reverse.
 */
import type { Experiment } from "../lab/plan/experiment_plan.ts";

export const experiment = {
  question: "Which strategy gives the lowest latency and the least database load for hot-key reads here?",
  expect:
    "db queries none ≫ redis ≈ two_tier ≈ tracking ≈ local; p99 local ≤ two_tier ≈ tracking < redis < none",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  // vegeta and k6 say exactly which targets they sent, so the hit ratio is checked against a simulation
  // of the very same keys; oha samples its list, and is checked against an emulated draw.
  tools: ["vegeta", "k6", "oha", "autocannon"],
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  attacks: [
    {
      name: "zipf_reads",
      model: { kind: "open", rateRps: 2_000 },
      // Only when no open-model tool is installed (a machine with just `bun install`): said loudly, recorded.
      fallbackModel: { kind: "closed", connections: 16 },
      durationS: 3,
      warmupS: 1,
      requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/quickstart.ts [options]` is `bun run experiment quickstart [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
