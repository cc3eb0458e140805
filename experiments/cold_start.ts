/**
 * Cold start (answers a write-up timing a first, second and third request to a Redis-cached API): caches flushed, then three passes over the same 10 000 keys on one server,
 * each key exactly once per pass (sequential keys replayed in order at a fixed rate).
 * Question: how slow is the first pass (all misses), and how fast do the second and third get?
 * Expect: pass 1 ≈ none for every strategy; pass 2 and 3 hit ratio ≈ 1 for local/redis/two_tier/tracking, p50 drops to
 * the cache's own cost; none stays flat.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

const KEYS = 10_000;
const RATE_RPS = 1_000;

function pass(name: string): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps: RATE_RPS },
    durationS: KEYS / RATE_RPS,
    warmupS: 0,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "sequential" }, seed: 42, keyspace: KEYS },
    targetCount: KEYS,
  };
}

export const experiment = {
  question: "How slow is a cold cache, and how quickly do the second and third passes recover?",
  expect:
    "pass1_miss ≈ none everywhere; pass2_hit and pass3_warm hit ratio ≈ 1 and lower p50 for cached strategies",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  // Tools that replay the target list in order, so each pass sends every key exactly once.
  tools: ["vegeta", "k6"],
  sequence: true,
  server: { l1TtlMs: 600_000, cacheTtlMs: 600_000, l1MaxEntries: 20_000 },
  attacks: [pass("pass1_miss"), pass("pass2_hit"), pass("pass3_warm")],
} satisfies Experiment;

// A script too: `bun experiments/cold_start.ts [options]` is `bun run experiment cold_start [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
