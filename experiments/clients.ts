/**
 * Clients (does the lab measure caches or its own clients?): none, redis and two_tier with each
 * combination of Postgres driver (postgres.js, Bun.SQL) and Redis client (ioredis, Bun's built-in
 * RedisClient), at a fixed moderate rate and in a closed model at saturation. none's rows differ only in the
 * Postgres driver (it never talks to Redis): its two Redis-client rows per driver show the run-to-run noise.
 * Question: what does the client choice change in p50/p99 and in the highest sustained rate?
 * Expect: at 1 000 rps every combination has about the same p50 (the clients are not the bottleneck); in the
 * closed model Bun.SQL lifts none (a CPU profile put most of none's time in node:net's write path, which
 * postgres.js and ioredis share, and Bun.SQL does not use), and Bun's Redis client lifts redis and two_tier's
 * misses and redis's hits by as much.
 */
import type { Experiment, ExperimentAttack, ServerSettings } from "../lab/plan/experiment_plan.ts";

const CLIENTS: { name: string; server: Pick<ServerSettings, "pgDriver" | "redisClient"> }[] = [
  { name: "pgjs_ioredis", server: { pgDriver: "postgres-js", redisClient: "ioredis" } },
  { name: "pgjs_bunredis", server: { pgDriver: "postgres-js", redisClient: "bun" } },
  { name: "bunsql_ioredis", server: { pgDriver: "bun-sql", redisClient: "ioredis" } },
  { name: "bunsql_bunredis", server: { pgDriver: "bun-sql", redisClient: "bun" } },
];

const LOADS: { name: string; model: ExperimentAttack["model"] }[] = [
  { name: "rate_1000", model: { kind: "open", rateRps: 1_000 } },
  { name: "closed_32", model: { kind: "closed", connections: 32 } },
];

function attack(load: (typeof LOADS)[number], clients: (typeof CLIENTS)[number]): ExperimentAttack {
  return {
    name: `${clients.name}_${load.name}`,
    model: load.model,
    durationS: 8,
    warmupS: 3,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    server: clients.server,
  };
}

export const experiment = {
  question:
    "What do the Postgres driver (postgres.js, Bun.SQL) and the Redis client (ioredis, Bun's) change in p50/p99 and in the highest sustained rate?",
  expect:
    "the same p50 at 1 000 rps; at saturation Bun.SQL lifts none and Bun's Redis client lifts redis and two_tier",
  strategies: ["none", "redis", "two_tier"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "k6"],
  attacks: LOADS.flatMap((load) => CLIENTS.map((clients) => attack(load, clients))),
} satisfies Experiment;

// A script too: `bun experiments/clients.ts [options]` is `bun run experiment clients [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
