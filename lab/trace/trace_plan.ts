/**
 * A trace as an experiment's key source: `--trace FILE` puts it in every attack, the run reads it once,
 * every attack's keyspace becomes its distinct keys (seeded as rows 1..N), and a plan that would run out of
 * trace, lose its order or send it as fast as it can is refused before anything starts.
 */
import { isAbsolute, join } from "node:path";
import { PAYLOAD_BYTES_MIN, sizeProfileFromTrace, sizesByKeyOf, UNSIZED } from "../../seed/payload.ts";
import type { SeedPlan } from "../../seed/seed.ts";
import type { AttackPlan, LoadModel, TraceKeys } from "../plan/attack_plan.ts";
import type { Experiment } from "../plan/experiment_plan.ts";
import { replayListSize, requestsBound } from "../plan/segments.ts";
import { traceTemplatesRefusal } from "../plan/targets.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { heldTrace, holdTrace } from "./loaded.ts";
import { loadTrace } from "./read.ts";
import type { CompactTrace } from "./trace.ts";

/** The most rows a trace's keys may become: what `bun run seed` takes (seed/seed.ts checkSeedPlan). */
export const MAX_TRACE_KEYS = 10_000_000;

/** Reads the trace `keys` names; a relative path is the repo's (an experiment's own sample). */
export function loadTraceKeys(keys: TraceKeys): Promise<CompactTrace> {
  const { format, columns, route, skipBadLines } = keys;
  const path = isAbsolute(keys.file) ? keys.file : join(REPO_ROOT, keys.file);
  return loadTrace(path, { format, columns, route, skipBadLines });
}

/** The experiment with `keys` as every attack's key source, in place of its own draws. */
export function withTrace(experiment: Experiment, keys: TraceKeys): Experiment {
  return {
    ...experiment,
    attacks: experiment.attacks.map((attack) => ({
      ...attack,
      keys: { distribution: keys, seed: attack.keys.seed },
    })),
  };
}

/**
 * Reads each trace the experiment's attacks name (once) and settles the plan on it: each trace attack's
 * keyspace is the trace's distinct keys and the seed holds at least that many rows. A string: why not.
 */
export async function prepareTraces(
  experiment: Experiment,
  load: (keys: TraceKeys) => Promise<CompactTrace>,
  log: (line: string) => void = () => {},
): Promise<Experiment | string> {
  let rows = experiment.seed.rows;
  const attacks = [];
  // Attacks that name the same trace (every attack under --trace, base twins) share one read.
  const read = new Map<string, CompactTrace>();
  for (const attack of experiment.attacks) {
    const keys = attack.keys.distribution;
    if (keys.kind !== "trace") {
      attacks.push(attack);
      continue;
    }
    let trace = read.get(JSON.stringify(keys));
    if (trace === undefined) {
      try {
        trace = holdTrace(keys, await load(keys));
      } catch (error) {
        return (error as Error).message;
      }
      read.set(JSON.stringify(keys), trace);
      log(describeTrace(trace));
    }
    const templates = traceTemplatesRefusal(attack, trace);
    if (templates !== null) return templates;
    if (trace.keys.length > MAX_TRACE_KEYS) {
      return `Cannot replay trace ${keys.file}: its ${trace.keys.length} distinct keys would be as many rows, over the ${MAX_TRACE_KEYS} the seed takes`;
    }
    rows = Math.max(rows, trace.keys.length);
    const paced = keys.pace === "recorded" ? recordedPace(trace, attack, keys.speed ?? 1) : attack.model;
    if (typeof paced === "string") return `Cannot replay trace ${keys.file} at its recorded pace: ${paced}`;
    const seed = sizedSeed(trace, attack.seed ?? experiment.seed);
    if (typeof seed === "string") return `Cannot replay trace ${keys.file}: ${seed}`;
    attacks.push({
      ...attack,
      model: paced,
      keys: { ...attack.keys, keyspace: trace.keys.length },
      ...(seed ? { seed } : {}),
    });
  }
  return { ...experiment, seed: { ...experiment.seed, rows }, attacks };
}

/** One line on what was read, and every line that was not a request, counted (never dropped silently). */
export function describeTrace(trace: CompactTrace): string {
  const { skips } = trace;
  const head = `trace ${trace.source.path} (${trace.source.format}): ${trace.keyIndex.length} requests, ${trace.keys.length} distinct keys`;
  const skipped = `skipped ${skips.unmatched} unmatched and ${skips.badLines} bad lines, ignored ${skips.ignored} (blank, comments, header)`;
  const first = skips.examples[0];
  return `${head}; ${skipped}${first ? `; first skipped: line ${first.line}: ${first.why}` : ""}`;
}

/**
 * The trace's own arrival rate, scaled by `speed`, as a ramping model: the warm-up holds the mean rate of
 * the trace's first `warmupS` (scaled) seconds, then one 1 s stage per following second, ramping to that
 * second's request count. A string: why it cannot (no timestamps, not in time order).
 */
export function recordedPace(
  trace: CompactTrace,
  attack: { warmupS: number; durationS: number },
  speed: number,
): LoadModel | string {
  const times = trace.tsMs;
  if (times === null || Number.isNaN(times[0] as number)) return "the trace has no timestamps";
  if (!(speed > 0 && Number.isFinite(speed))) return `speed must be > 0: received ${speed}`;
  const seconds = attack.warmupS + attack.durationS;
  const counts = new Float64Array(Math.max(1, seconds));
  const first = times[0] as number;
  let last = first;
  for (let i = 0; i < times.length; i++) {
    const at = times[i] as number;
    if (!(at >= last)) return `request ${i + 1} is out of time order or has no timestamp`;
    last = at;
    const second = Math.floor(((at - first) * speed) / 1_000);
    if (second >= seconds) break;
    counts[second] = (counts[second] as number) + 1;
  }
  let warmup = 0;
  for (let k = 0; k < attack.warmupS; k++) warmup += counts[k] as number;
  const startRps = attack.warmupS > 0 ? Math.max(1, Math.round(warmup / attack.warmupS)) : 1;
  const stages = [];
  for (let k = attack.warmupS; k < seconds; k++) {
    stages.push({ targetRps: Math.max(1, counts[k] as number), durationS: 1 });
  }
  return { kind: "ramping", startRps, stages };
}

/**
 * With value sizes, the attack's own seed: at least a row per key, each key's row sized to its last value
 * size in the trace (so Redis moves and the server serializes what the user's cache would); rows past the
 * trace's keys, and keys it never sized, keep `descriptionBytes`. Without sizes: undefined (the plan's seed).
 */
function sizedSeed(trace: CompactTrace, base: SeedPlan): SeedPlan | string | undefined {
  const sizes = sizesByKeyOf(trace);
  if (sizes === null || !sizes.some((size) => size !== UNSIZED)) return undefined;
  try {
    const payloadBytes = sizeProfileFromTrace(
      sizes.map((size) => (size === UNSIZED ? size : Math.max(size, PAYLOAD_BYTES_MIN))),
    );
    return { ...base, rows: Math.max(base.rows, trace.keys.length), payloadBytes };
  } catch (error) {
    return (error as Error).message;
  }
}

/** Why a tool that walks its list as `sends` cannot replay the plan's trace faithfully, or null. */
export function traceRefusal(plan: AttackPlan, sends: "prefix" | "stripes" | "sampled"): string | null {
  const keys = plan.keys.distribution;
  if (keys.kind !== "trace") return null;
  if (sends === "sampled") {
    return "it draws each request at random from its list, so a trace's order cannot be kept";
  }
  if (plan.model.kind === "closed") {
    return "a trace is replayed at a rate (an open or ramping model), not as fast as connections allow";
  }
  const trace = heldTrace(keys);
  const needed = [plan.warmupS, plan.durationS]
    .filter((durationS) => durationS > 0)
    .reduce((sum, durationS) => sum + replayListSize(requestsBound(plan, durationS)), 0);
  const held = trace.keyIndex.length;
  if (needed <= held) return null;
  return (
    `the trace ${keys.file} holds ${held} requests; a ${plan.warmupS} s warm-up and a ${plan.durationS} s ` +
    `run of ${plan.name} need ${needed}, and a trace is never replayed: lower the rate or the durations`
  );
}

/** What a row says of the order the trace was sent in: whole, or per connection (stripes), or none. */
export function traceOrder(plan: AttackPlan, sends: "prefix" | "stripes" | "sampled"): string | null {
  if (plan.keys.distribution.kind !== "trace") return null;
  if (sends === "prefix") return "in order";
  if (sends === "stripes") return "in order per connection";
  return "not kept";
}
