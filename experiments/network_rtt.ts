/**
 * Network distance (answers "Redis or local?" for a service in the cloud, where Redis and Postgres are a hop
 * away, not on loopback): Redis and Postgres each reached directly, then through Toxiproxy with 0, 0.25 and
 * 1 ms added each way (a round trip gains twice that; a same-zone cloud hop is a few tenths of a millisecond),
 * at a fixed moderate arrival rate and in a closed model at saturation. "+0 ms" is the proxy hop alone (its
 * own cost, CPU on the same 2 cores), to read the others against. Sub-millisecond distance needs the lab's
 * Toxiproxy build (tools/toxiproxy, its `latency_us` toxic).
 * Question: how does the ranking of none, local, redis and two_tier change with the distance?
 * Expect: at a moderate rate, p50 of none and redis grows by about one round trip per hop they take (none: the
 * database; redis: Redis on a hit, Redis + database on a miss), local, two_tier and tracking barely move (L1 hits take
 * no hop); at saturation the closed model's throughput of none and redis falls with the round trip (each
 * connection waits for it), local and two_tier keep theirs.
 */
import type { Experiment, ExperimentAttack, NetworkPath } from "../lab/plan/experiment_plan.ts";

const PATHS: { name: string; path: NetworkPath | null }[] = [
  { name: "direct", path: null },
  { name: "proxy_0ms", path: { latencyMs: 0 } },
  { name: "proxy_0.25ms", path: { latencyMs: 0.25 } },
  { name: "proxy_1ms", path: { latencyMs: 1 } },
];

const LOADS: { name: string; model: ExperimentAttack["model"] }[] = [
  { name: "rate_1000", model: { kind: "open", rateRps: 1_000 } },
  { name: "closed_32", model: { kind: "closed", connections: 32 } },
];

function attack(load: (typeof LOADS)[number], path: (typeof PATHS)[number]): ExperimentAttack {
  return {
    name: `${path.name}_${load.name}`,
    model: load.model,
    durationS: 8,
    warmupS: 3,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    ...(path.path === null ? {} : { network: { redis: path.path, postgres: path.path } }),
  };
}

export const experiment = {
  question:
    "How does the ranking of none, local, redis and two_tier change when Redis and Postgres are 0–1 ms away (each way)?",
  expect:
    "none and redis slow down by a round trip per hop and lose closed-model throughput; local, two_tier and tracking barely move",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "k6"],
  attacks: LOADS.flatMap((load) => PATHS.map((path) => attack(load, path))),
} satisfies Experiment;

// A script too: `bun experiments/network_rtt.ts [options]` is `bun run experiment network_rtt [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
