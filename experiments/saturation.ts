/**
 * Saturation (answers the t3.micro write-up, where every mode collapsed at the same low TPS): arrival-rate steps on a
 * ~95% hit-ratio workload (95% of requests on 5% of the keys), each step a fresh server, until p99 > 100 ms,
 * errors > 1% or dropped load.
 * Question: what is the highest rate each strategy sustains here before its tail breaks?
 * Expect: none saturates first (Postgres and the pool), then redis; local and two_tier go furthest, until the
 * load generator sharing the 2 cores becomes the limit (watch loadgen_cpu_s).
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

const STEPS_RPS = [1_000, 2_000, 4_000, 6_000, 8_000, 12_000, 16_000, 24_000, 32_000, 40_000];
const P99_LIMIT_MS = 100;

function step(rateRps: number): ExperimentAttack {
  return {
    name: `rate_${rateRps}`,
    model: { kind: "open", rateRps },
    durationS: 10,
    warmupS: 3,
    maxConnections: 512,
    // oha, the leanest open-model generator here, draws each URL from its list with replacement; at 8 000 rps
    // and up even the longest list (3 000 000 lines) re-sends some targets: 6.4% at 40 000 rps × 10 s. Each
    // re-sent target is a key already requested, so it can only turn a miss into a hit: with this workload's
    // miss ratio ≤ 0.05 at those steps, the hit ratio reads at most 0.064 × 0.05 ≈ 0.003 high, and the rows
    // say what was re-sent. (vegeta, the next tool, ran out of ephemeral ports at 24 000 rps on this machine.)
    allowedReuseRatio: 0.07,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "hotspot", hotFraction: 0.05, hotShare: 0.95 }, seed: 42 },
  };
}

export const experiment = {
  question: "What is the highest arrival rate each strategy sustains with p99 ≤ 100 ms and errors ≤ 1%?",
  expect: "none < redis < two_tier ≈ local",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["oha", "vegeta", "k6"],
  attacks: STEPS_RPS.map(step),
  stopWhen: (outcome) => {
    if (!outcome.valid) return `saturated: ${outcome.invalidReason}`;
    const p99 = outcome.result?.latencyMs.p99 ?? null;
    return p99 !== null && p99 > P99_LIMIT_MS
      ? `saturated: p99 ${p99.toFixed(1)} ms > ${P99_LIMIT_MS} ms`
      : null;
  },
} satisfies Experiment;

// A script too: `bun experiments/saturation.ts [options]` is `bun run experiment saturation [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
