/**
 * Cache on/off, one variable at a time (answers a write-up's cache on/off throughput ratio: nGrinder, 80% list pages): the same closed-model load, 80% list pages and
 * 20% product details with random category, page and id, against none, redis and local.
 * Question: what throughput ratio does turning the cache on buy at a fixed number of connections?
 * Expect: throughput local > redis > none; the seed's "3× TPS" target is reachable only where Postgres, not
 * the handler, is the limit. A closed model measures capacity, not latency under a fixed arrival rate.
 */
import type { Experiment } from "../lab/plan/experiment_plan.ts";

export const experiment = {
  question: "At a fixed number of connections, what throughput ratio does a cache buy over none (80% lists)?",
  expect: "throughput local > redis > none; ratio vs none well above 1 for lists",
  strategies: ["none", "redis", "local"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  // A capacity question in a closed model: wrk is the leanest generator (TechEmpower's choice), so the box's
  // cores go to the server rather than to the tool.
  tools: ["wrk", "k6", "vegeta", "autocannon"],
  attacks: [
    {
      name: "list_detail_mix",
      model: { kind: "closed", connections: 32 },
      durationS: 20,
      warmupS: 5,
      requests: [
        {
          name: "list",
          weight: 80,
          method: "GET",
          path: "/products?category={category}&page={page}&size=20",
          vars: { category: { min: 1, max: 50 }, page: { min: 0, max: 9 } },
        },
        { name: "detail", weight: 20, method: "GET", path: "/products/{id}" },
      ],
      keys: { distribution: { kind: "uniform" }, seed: 42 },
    },
  ],
} satisfies Experiment;

// A script too: `bun experiments/cache_toggle.ts [options]` is `bun run experiment cache_toggle [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
