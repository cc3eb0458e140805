/**
 * Stampede (a hot key expiring under load, which no seed measured): 20 hot products read at 5 000 rps (250
 * reads per key per second), cached for 1 s, over 10 s: about ten expiries per key. Once with plain expiry,
 * twice with XFetch early refresh (Vattani, Chierichetti and Lowenstein, VLDB 2015): a read shortly before
 * expiry, with probability exp(−(time to expiry)/(β·Δ)) where Δ is how long the last load took, starts one
 * background reload and is answered from the cache meanwhile. β = 1 is the paper's default; β = 50 scales the
 * window to this workload, where a load takes Δ ≈ 0.5 ms but a key is read only every 4 ms, so with β = 1
 * the window (a few Δ) usually holds no read at all.
 * Question: how many requests wait on a database load when a hot key expires, and does early refresh remove
 * them?
 * Expect: every strategy single-flights, so about one load per key per expiry (loads_per_key_per_ttl ≈ 1);
 * without early refresh each expiry makes the next read (and any that arrive during its load) wait
 * (load_waits ≈ keys × expiries); with β = 50, load_waits ≈ 0 and the loads move to the background
 * (refresh_loads), at about as many loads as expiries; β = 1 helps little here.
 * Then the same without and with β = 50 on two server instances (the stream dealt round-robin): each
 * process single-flights its own loads, so local, which shares nothing, loads each key once per expiry in
 * each process (loads_per_key_per_ttl ≈ 2, counted across the deployment), while redis, two_tier and tracking share
 * the entry and load about once per expiry in all (≈ 1, more only when both instances miss within one
 * load's time).
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

function attack(name: string, earlyRefreshBeta: number, instances = 1): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps: 5_000 },
    durationS: 10,
    warmupS: 2,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "uniform" }, seed: 42, keyspace: 20 },
    server: { earlyRefreshBeta, instances },
  };
}

export const experiment = {
  question:
    "How many requests wait on a database load when hot keys expire, and does XFetch early refresh remove them?",
  expect:
    "≈1 load per key per expiry either way (local on 2 instances ≈ 2); load_waits ≈ keys × expiries without early refresh, ≈ 0 with it",
  strategies: ["local", "redis", "two_tier", "tracking"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  server: { cacheTtlMs: 1_000, l1TtlMs: 500 },
  tools: ["vegeta", "k6"],
  attacks: [
    attack("expiry", 0),
    attack("early_refresh_b1", 1),
    attack("early_refresh_b50", 50),
    attack("expiry_2_instances", 0, 2),
    attack("early_refresh_b50_2_instances", 50, 2),
  ],
} satisfies Experiment;

// A script too: `bun experiments/stampede.ts [options]` is `bun run experiment stampede [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
