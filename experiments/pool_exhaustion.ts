/**
 * Pool exhaustion (answers the t3.micro write-up, whose server collapsed when its connection pool ran dry): a pool of 2
 * Postgres connections, arrival rates stepping past what the database answers through it, once with
 * today's unbounded wait (postgres.js queues every query, without a bound or a timeout) and once with load
 * shedding on (at most 32 requests wait for a database slot, none longer than 20 ms; past that the server
 * answers 503 with Retry-After and counts it).
 * Question: when the pool runs dry, does latency grow without bound, and what does shedding buy?
 * Expect: none, unbounded: p99 grows step by step once the rate passes what 2 connections answer (by hand:
 * 9 000 rps fine, 20 000 rps p99 181 ms); none, bounded: the answered requests' p99 stays near the 20 ms
 * wait bound while a growing share is shed; local and redis take ~80% of the reads off the pool, so they
 * neither queue nor shed at these rates. No step crashes the server (watch server_rss_peak_mb).
 * Read per step: achieved rps, latency_ok_p99_ms (2xx only), shed_ratio, server_rss_peak_mb.
 * The gate admits one query per pooled connection, giving up postgres.js's pipelining: with a pool of 2 it
 * answers less than the unbounded pool does, so it starts shedding at rates the unbounded pool still serves.
 */
import type { Experiment, ExperimentAttack, ServerSettings } from "../lab/plan/experiment_plan.ts";

const RATES_RPS = [5_000, 10_000, 15_000, 20_000];
const MODES: { name: string; server: Partial<ServerSettings> }[] = [
  // Explicitly off, whatever the defaults: the server's own (PG_ACQUIRE_TIMEOUT_MS=2000) would shed what this mode lets queue.
  { name: "unbounded", server: { pgQueueMax: 0, pgAcquireTimeoutMs: 0 } },
  { name: "bounded", server: { pgQueueMax: 32, pgAcquireTimeoutMs: 20 } },
];

function step(mode: (typeof MODES)[number], rateRps: number): ExperimentAttack {
  return {
    name: `${mode.name}_${rateRps}`,
    model: { kind: "open", rateRps },
    durationS: 8,
    warmupS: 3,
    maxConnections: 1_024,
    // oha draws each URL from its list with replacement; at 20 000 rps × 8 s even the longest list (3 000 000
    // lines) re-sends about 2.7% of them. A re-sent target can only turn a miss into a hit: with these hit
    // ratios (≥ 0.82, so a miss ratio ≤ 0.18) the hit ratio reads at most 0.03 × 0.18 ≈ 0.005 high.
    allowedReuseRatio: 0.03,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    server: mode.server,
  };
}

export const experiment = {
  question:
    "With a pool of 2, does latency grow without bound past what the database answers, and what does shedding buy?",
  expect:
    "none unbounded: p99 grows with each step; none bounded: answered p99 near 20 ms, shed ratio > 0; local and redis unaffected",
  strategies: ["none", "redis", "local"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  server: { pgPoolMax: 2 },
  // oha: the leanest open-model generator here. vegeta, tried first, could not hold 15 000–20 000 rps next to
  // the server on 2 cores (the server idle, 1.3 CPU-s in 10 s, while vegeta spent 17 opening a connection per
  // request, before its connections were capped); capped, it holds 15 000 but its own queue is in the tail.
  tools: ["oha", "vegeta"],
  sheddingExpected: true,
  attacks: MODES.flatMap((mode) => RATES_RPS.map((rate) => step(mode, rate))),
} satisfies Experiment;

// A script too: `bun experiments/pool_exhaustion.ts [options]` is `bun run experiment pool_exhaustion [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
