/**
 * Redis outage (answers the question every seed skipped: what happens to a cached service when Redis is a
 * network hop away and fails?). One measured run per strategy and repeat (three, interleaved: about 6½ minutes)
 * at a steady arrival rate; the server reaches Redis through Toxiproxy. At 6 s Redis goes down (proxy
 * disabled: connections closed, new ones refused) for 5 s; at 16 s it hangs (a timeout toxic on both
 * streams: connections stay open, nothing answers) for 5 s.
 * Question: how many requests fail, how slow is the worst second of each fault, and how fast do hits return?
 * Expect: none is untouched (it never calls Redis). redis and two_tier fail open: 0 failed requests; during
 * the hang each request in flight pays at most one command timeout (100 ms) before the circuit breaker
 * opens, so the worst one-second p99 stays under ~100 ms + a database query; hits are back within 2 s of
 * each recovery (the breaker's 1 s cool-down, then a probe). two_tier's L1 keeps serving its hot keys
 * throughout; tracking drops its L1 at the first failed command (a push may be lost) and refills it only
 * from Redis, so it reads like redis during each fault and comes back like two_tier.
 * Read the timeline (results/redis_outage.timeline.csv, and the report's chart): rps, p99 and hit ratio
 * per second, with the fault windows shaded.
 */
import type { Experiment } from "../lab/plan/experiment_plan.ts";

export const experiment = {
  question:
    "When Redis goes down, then hangs, how many requests fail, how slow is the worst second, and how fast do hits come back?",
  expect:
    "0 failed for every strategy; worst 1-s p99 during the hang ≤ one command timeout (100 ms) + a DB query; hits back within 2 s of recovery",
  strategies: ["none", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "k6", "oha"],
  attacks: [
    {
      name: "outage",
      model: { kind: "open", rateRps: 1_000 },
      durationS: 27,
      warmupS: 5,
      requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
      network: { redis: { latencyMs: 0 } },
      faults: [
        { service: "redis", kind: "down", atS: 6, durationS: 5 },
        { service: "redis", kind: "hang", atS: 16, durationS: 5 },
      ],
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/redis_outage.ts [options]` is `bun run experiment redis_outage [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
