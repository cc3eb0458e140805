/**
 * Scale-out (answers a write-up's argument that a local cache "can't be shared", with numbers): 1, 2 and 4
 * server instances of each strategy behind a round-robin dealer (stream position p goes to instance
 * p mod N), Zipf(1.1) reads with 5% writes at a fixed arrival rate. Beside the load a checker primes a row on
 * every instance, writes it through one, and times how long each other instance keeps serving the old
 * version (lab/cell/staleness.ts). Caches live 2 s (local's, and Redis'), two_tier's L1 1 s.
 * Question: what does sharing (redis), not sharing (local) and both (two_tier) cost and buy as instances are
 * added: hit ratio, database queries, latency, and how long another instance serves an old row?
 * Expect: local's hit ratio falls with N (each instance warms its own cache on 1/N of the stream) and its
 * database queries grow with it, and another instance serves an old row for up to its TTL (p50 ≈ TTL, the
 * copy was primed just before the write); redis, two_tier and tracking keep one shared hit ratio whatever N;
 * redis' staleness is 0 (its DEL lands before the PUT answers), two_tier's the pub/sub delay and tracking's
 * the push's (about a millisecond each);
 * none is the baseline: no staleness, every read a query.
 */
import { stalenessChecker } from "../lab/cell/staleness.ts";
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

function attack(instances: number): ExperimentAttack {
  return {
    name: `instances_${instances}`,
    model: { kind: "open", rateRps: 1_500 },
    durationS: 15,
    warmupS: 5,
    requests: [
      { name: "detail", weight: 95, method: "GET", path: "/products/{id}" },
      {
        name: "update",
        weight: 5,
        method: "PUT",
        path: "/products/{id}",
        body: '{"stock":{stock}}',
        vars: { stock: { min: 0, max: 1000 } },
      },
    ],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    server: { instances },
  };
}

export const experiment = {
  question:
    "What do sharing (redis), not sharing (local) and both (two_tier) cost and buy at 1, 2 and 4 instances: hit ratio, database queries, latency, staleness?",
  expect:
    "local: hit ratio falls and queries grow with N, staleness up to its TTL; redis, two_tier and tracking: one shared hit ratio, staleness 0, ≈ the bus delay and ≈ the push delay",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  server: { cacheTtlMs: 2_000, l1TtlMs: 1_000 },
  tools: ["vegeta", "k6"],
  attacks: [attack(1), attack(2), attack(4)],
  during: stalenessChecker({ marginMs: 50 }),
} satisfies Experiment;

// A script too: `bun experiments/scale_out.ts [options]` is `bun run experiment scale_out [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
