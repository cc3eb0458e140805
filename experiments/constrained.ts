/**
 * A constrained box (answers the t3.micro write-up, where the server itself was the bottleneck): the server
 * process limited to half a CPU (a cgroup v1 CFS quota; taskset to one core where no cpu controller is
 * usable, and the row says which), a pool of 4, and the lab's Redis capped at 8 MB (allkeys-lru, so it
 * evicts). A moderate open rate for latency and a closed model for the most the box answers.
 * Question: which strategy wins when the server's own CPU is the bottleneck?
 * Expect: local and two_tier answer hits without leaving the process or serializing to a socket, so they
 * get the most out of half a CPU; redis pays a client round trip per hit in the server's CPU and loses part
 * of its hit ratio to evictions (redis_evicted_keys); none is bounded by the pool and the database.
 * Budget: two 10 s attacks after 3 s warm-ups × five strategies × three repeats (the card's pick needs
 * intervals): about 7 minutes.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

const READS: ExperimentAttack["requests"] = [
  { name: "detail", weight: 1, method: "GET", path: "/products/{id}" },
];

export const experiment = {
  question: "Which strategy wins when the server itself is the bottleneck (0.5 CPU, pool of 4, Redis 8 MB)?",
  expect: "local ≈ two_tier > redis > none in closed-model rps; redis evicts and loses hit ratio",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  server: { cpuLimit: 0.5, pgPoolMax: 4, redisMaxmemoryMb: 8 },
  tools: ["vegeta", "k6"],
  attacks: [
    {
      name: "rate_500",
      model: { kind: "open", rateRps: 500 },
      durationS: 10,
      warmupS: 3,
      requests: READS,
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    },
    {
      name: "closed_16",
      model: { kind: "closed", connections: 16 },
      durationS: 10,
      warmupS: 3,
      requests: READS,
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/constrained.ts [options]` is `bun run experiment constrained [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
