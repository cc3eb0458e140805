/**
 * Load-generator scaling (on one 2-core machine the generator shares the server's cores and its
 * network stack): saturation's ladder of arrival rates on its ~95% hit-ratio workload, for none and local,
 * with the load generated beside the server (loopback), from one load-generator host, and from two, split
 * by vegeta's rate and merged exactly. The hosts are network namespaces on this machine (veth pairs to a
 * bridge, lab/isolation/netns.ts): the generators leave the server's loopback for a real TCP/IP path, but still
 * share its two cores. Each ladder stops at its first step with p99 > 100 ms, errors > 1% or dropped load.
 * Question: do the top steps move when the generator no longer shares the server's network stack?
 * Expect: no higher, probably lower: the namespaces remove the loopback shortcut and add veth and the
 * bridge, while the CPU the generator competes for stays the same two cores; only real separate machines
 * (the same setting's hosts on other hardware) can lift the generator's limit.
 */
import type { Experiment, ExperimentAttack } from "../lab/plan/experiment_plan.ts";

const STEPS_RPS = [2_000, 4_000, 8_000, 12_000, 16_000, 24_000];
const HOSTS = [0, 1, 2];
const P99_LIMIT_MS = 100;

function step(loadgenHosts: number, rateRps: number): ExperimentAttack {
  return {
    name: `hosts_${loadgenHosts}_rate_${rateRps}`,
    model: { kind: "open", rateRps },
    durationS: 8,
    warmupS: 3,
    maxConnections: 512,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "hotspot", hotFraction: 0.05, hotShare: 0.95 }, seed: 42 },
    loadgenHosts,
  };
}

export const experiment = {
  question:
    "Do saturation's top steps move when the load comes from 1 or 2 hosts of its own instead of the server's loopback?",
  expect:
    "no higher on one machine: the hosts share its two cores, and veth and the bridge cost more than loopback",
  strategies: ["none", "local"],
  repeats: 1,
  seed: { rows: 100_000, seed: 42, descriptionBytes: 200 },
  tools: ["vegeta"],
  attacks: HOSTS.flatMap((hosts) => STEPS_RPS.map((rate) => step(hosts, rate))),
  stopScope: (attack) => String(attack.loadgenHosts ?? 0),
  stopWhen: (outcome) => {
    if (!outcome.valid) return `saturated: ${outcome.invalidReason}`;
    const p99 = outcome.result?.latencyMs.p99 ?? null;
    return p99 !== null && p99 > P99_LIMIT_MS
      ? `saturated: p99 ${p99.toFixed(1)} ms > ${P99_LIMIT_MS} ms`
      : null;
  },
} satisfies Experiment;

// A script too: `bun experiments/loadgen_scaling.ts [options]` is `bun run experiment loadgen_scaling [options]`.
if (import.meta.main)
  await (await import("../lab/cli/experiment.ts")).runExperimentFile(import.meta.path, experiment);
