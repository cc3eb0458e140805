/**
 * Your workload: a trace replayed in its own order through every strategy, each cell from an empty cache.
 * By default the sample trace the lab ships (experiments/traces/sample.csv.gz: 40 000 requests over
 * 11 231 keys, 4% writes, value sizes per key; lab/trace/sample_trace.ts made it); `--trace FILE` swaps in
 * yours (`--trace-format`, `--trace-columns`, `--route` and `--skip-bad-lines` as `bun run trace` takes them).
 * Question: for this trace, on this machine, which strategy gives the lowest latency and database load?
 * Expect: hit ratios equal to their simulations of the exact segment sent; with the sample, a lower hit
 * ratio than quickstart's (one-hit wonders and writes), local below redis (its 2 000 entries hold less than
 * the replay's ~6 600 keys), two_tier and tracking at redis's hit ratio with local's latency.
 * Budget: five 15 s replays after 5 s warm-ups at 1 000 rps (20 000 of the trace's requests, the same ones in
 * every cell), three times interleaved, so the card's pick has intervals: ~5 minutes.
 *
 * Copy this file to match your deployment, then run it with `bun experiments/<copy>.ts --trace FILE`:
 * - rate: `model.rateRps` (or `--rate-rps`); the trace must hold (warm-up + measured) × rate requests.
 * - instances: `server: { instances: N }` (each with its own local or L1 cache; vegeta or k6 deal the
 *   stream round-robin);
 * - TTLs and sizes: `server: { cacheTtlMs, l1TtlMs, l1MaxEntries }`;
 * - distance: `network: { redis: { latencyMs }, postgres: { latencyMs } }` on the attack (Toxiproxy);
 * - CPU: `server: { cpuLimit: 1 }` (a cgroup quota in cores).
 */
import type { Experiment } from "../lab/plan/experiment_plan.ts";

export const experiment = {
  question: "For this trace, on this machine, which strategy gives the lowest latency and database load?",
  expect:
    "hit ratios equal their simulations; local's below redis's; two_tier and tracking at redis's hit ratio, local's latency",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  // A trace is replayed at a rate and in order: vegeta and k6 send their list in order; oha draws at
  // random, and wrk and autocannon run closed models only, so they are refused.
  tools: ["vegeta", "k6"],
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  // A local cache (and L1) smaller than the sample's working set (~6 600 keys in a replay), so its size
  // shows: the report draws the curves with this capacity marked. Set yours to what your service holds.
  server: { l1MaxEntries: 2_000 },
  attacks: [
    {
      name: "replay",
      model: { kind: "open", rateRps: 1_000 },
      durationS: 15,
      warmupS: 5,
      requests: [
        { name: "read", weight: 1, method: "GET", path: "/products/{id}" },
        {
          name: "write",
          weight: 1,
          method: "PUT",
          path: "/products/{id}",
          body: '{"stock":{stock}}',
          vars: { stock: { min: 0, max: 1000 } },
        },
      ],
      keys: {
        distribution: { kind: "trace", file: "experiments/traces/sample.csv.gz", format: "csv" },
        seed: 42,
      },
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/your_workload.ts [options]` is `bun run experiment your_workload [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
