/**
 * Reads with 10% writes (answers a write-up's @CacheEvict question: what invalidation on updates costs): Zipf reads and PUTs that bump a row's
 * version and invalidate it, at a fixed arrival rate. Beside the load, a checker PUTs a random row and reads it
 * straight back, counting reads that return a version older than the one the PUT acknowledged.
 * Question: what do writes cost each strategy in hit ratio and latency, and does any serve a stale row?
 * Expect: hit ratios lower than read_heavy (each PUT evicts a hot key); stale_reads = 0 for every strategy
 * on one instance.
 */

import { versionOf } from "../lab/cell/staleness.ts";
import type { DuringContext, DuringResult, Experiment } from "../lab/plan/experiment_plan.ts";
import type { SimRequest } from "../lab/sim/simulate.ts";
import { PROBE_PREFIX } from "../server_config.ts";

/**
 * PUT then GET the same row; a GET older than the PUT's version is a stale read. Its requests go to the
 * server's probe routes, so they stay out of the workload's counters and distinct keys. A check whose PUT or
 * GET fails (a transport error, a non-200 answer, a body without a version) is a failed check, never a clean
 * one.
 */
export async function staleReadChecker(context: DuringContext): Promise<DuringResult> {
  let staleReads = 0;
  let checks = 0;
  let failed = 0;
  const probes: SimRequest[] = [];
  while (!context.signal.aborted) {
    const id = 1 + Math.floor(Math.random() * context.keyspace);
    const url = `${context.serverUrl}${PROBE_PREFIX}/products/${id}`;
    try {
      const put = await fetch(url, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ stock: Math.floor(Math.random() * 1_000) }),
      });
      const written = await versionOf(put, "PUT");
      probes.push({ op: "write", id, atMs: context.nowMs(), probe: true });
      const read = await versionOf(await fetch(url), "GET");
      probes.push({ op: "detail", id, atMs: context.nowMs(), probe: true });
      checks++;
      if (read < written) staleReads++;
    } catch {
      failed++;
    }
    await Bun.sleep(20);
  }
  return { staleReads, checks, failed, probes };
}

export const experiment = {
  question: "What do 10% writes cost each strategy in hit ratio and latency, and is any read stale?",
  expect: "lower hit ratios than read_heavy; stale_reads = 0 on one instance",
  strategies: ["none", "local", "redis", "two_tier", "tracking"],
  repeats: 3,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta", "k6"],
  attacks: [
    {
      name: "reads_10pct_puts",
      model: { kind: "open", rateRps: 1_500 },
      durationS: 20,
      warmupS: 5,
      requests: [
        { name: "detail", weight: 90, method: "GET", path: "/products/{id}" },
        {
          name: "update",
          weight: 10,
          method: "PUT",
          path: "/products/{id}",
          body: '{"stock":{stock}}',
          vars: { stock: { min: 0, max: 1000 } },
        },
      ],
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    },
  ],
  during: staleReadChecker,
} satisfies Experiment;

// A script too: `bun experiments/write_mix.ts [options]` is `bun run experiment write_mix [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
