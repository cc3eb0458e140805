/**
 * Pre-generates an attack's targets from its seed: which template, which key, which variables. Tools only
 * replay or sample this list, so the key distribution is the plan's, never a tool's own, and every strategy
 * is attacked with the same requests.
 */
import { heldTrace } from "../trace/loaded.ts";
import type { CompactTrace } from "../trace/trace.ts";
import type { AttackPlan, KeyPlan, RequestTemplate, Target } from "./attack_plan.ts";

/** mulberry32's state step: its state after n draws is seed + n·step (mod 2^32), so a stream can seek. */
const MULBERRY32_STEP = 0x6d2b79f5;

/** mulberry32: a small, fast, seedable PRNG; returns floats in [0, 1); `skip` draws already taken. */
export function seededRandom(seed: number, skip = 0): () => number {
  let state = ((seed >>> 0) + Math.imul(skip, MULBERRY32_STEP)) >>> 0;
  return () => {
    state = (state + MULBERRY32_STEP) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A seeded permutation of 1..n: rank r (0-based) → id, so hot keys are spread over the table. */
export function rankToId(n: number, seed: number): Int32Array {
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i + 1;
  const random = seededRandom(seed ^ 0x5eed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const swap = ids[i] as number;
    ids[i] = ids[j] as number;
    ids[j] = swap;
  }
  return ids;
}

/** Probability of each rank (0-based) under the distribution; `sequential` is uniform over a pass. */
export function rankProbabilities(keys: KeyPlan): Float64Array {
  const n = keys.keyspace;
  const p = new Float64Array(n);
  const d = keys.distribution;
  if (d.kind === "zipf") {
    let total = 0;
    for (let k = 0; k < n; k++) {
      p[k] = 1 / (k + 1) ** d.exponent;
      total += p[k] as number;
    }
    for (let k = 0; k < n; k++) p[k] = (p[k] as number) / total;
  } else if (d.kind === "hotspot") {
    const hot = hotCount(keys);
    for (let k = 0; k < n; k++) p[k] = k < hot ? d.hotShare / hot : (1 - d.hotShare) / (n - hot);
  } else if (d.kind === "trace") {
    throw new RangeError("Cannot give a trace's key probabilities: a trace is a sequence, not a draw");
  } else {
    p.fill(1 / n);
  }
  return p;
}

function hotCount(keys: KeyPlan): number {
  if (keys.distribution.kind !== "hotspot") return 0;
  return Math.min(keys.keyspace - 1, Math.max(1, Math.round(keys.distribution.hotFraction * keys.keyspace)));
}

/** Throws RangeError when the key plan cannot be sampled. */
export function checkKeyPlan(keys: KeyPlan): void {
  const d = keys.distribution;
  if (!Number.isInteger(keys.keyspace) || keys.keyspace < 1) {
    throw new RangeError(
      `Cannot sample keys: keyspace must be a positive integer: received ${keys.keyspace}`,
    );
  }
  if (d.kind === "zipf" && !(d.exponent > 0)) {
    throw new RangeError(`Cannot sample keys: zipf exponent must be > 0: received ${d.exponent}`);
  }
  if (d.kind === "hotspot") {
    if (!(d.hotFraction > 0 && d.hotFraction < 1) || !(d.hotShare > 0 && d.hotShare < 1)) {
      throw new RangeError(
        `Cannot sample keys: hotspot hotFraction and hotShare must be in (0, 1): received ${d.hotFraction}, ${d.hotShare}`,
      );
    }
    if (keys.keyspace < 2) throw new RangeError("Cannot sample keys: hotspot needs a keyspace of at least 2");
  }
}

/** Draws of the generator one key takes (sequential takes none: it counts); TargetStream.seek relies on it. */
const KEY_DRAWS = { uniform: 1, zipf: 1, hotspot: 2, sequential: 0 } as const;

/**
 * Returns a function that draws the next key (an id in 1..keyspace) from `random`; a sequential one starts
 * at its `first` key (0-based).
 */
export function keySampler(keys: KeyPlan, random: () => number, first = 0): () => number {
  checkKeyPlan(keys);
  const n = keys.keyspace;
  const d = keys.distribution;
  if (d.kind === "sequential") {
    let next = first;
    return () => {
      const id = (next % n) + 1;
      next++;
      return id;
    };
  }
  if (d.kind === "uniform") return () => 1 + Math.floor(random() * n);
  if (d.kind === "trace") throw new RangeError("Cannot sample a trace's keys: TraceStream walks it in order");
  const ids = rankToId(n, keys.seed);
  if (d.kind === "hotspot") {
    const hot = hotCount(keys);
    return () => {
      const rank =
        random() < d.hotShare ? Math.floor(random() * hot) : hot + Math.floor(random() * (n - hot));
      return ids[rank] as number;
    };
  }
  const cdf = rankProbabilities(keys);
  for (let k = 1; k < n; k++) cdf[k] = (cdf[k] as number) + (cdf[k - 1] as number);
  return () => {
    const u = random() * (cdf[n - 1] as number);
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cdf[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return ids[lo] as number;
  };
}

const PLACEHOLDER = /\{([a-zA-Z_][a-zA-Z0-9_]*)\}/g;

function fill(template: string, values: Record<string, number>): string {
  return template.replace(PLACEHOLDER, (_match, name: string) => {
    const value = values[name];
    if (value === undefined)
      throw new RangeError(`Cannot fill template: no value for {${name}}: received ${template}`);
    return String(value);
  });
}

function usesId(template: RequestTemplate): boolean {
  return template.path.includes("{id}") || (template.body ?? "").includes("{id}");
}

/**
 * A plan's one seeded stream of targets. `take(n)` hands out the next `n` positions, never one it handed out
 * before: the warm-up takes the first segment, the measured run the next, so a measured run can never
 * re-send what the warm-up sent (a replayed stream flatters every cache).
 */
export class TargetStream {
  readonly #plan: AttackPlan;
  #random: () => number;
  // The sampler draws through this, so a seek that replaces #random reaches it without rebuilding its CDF.
  readonly #draw = () => this.#random();
  #nextKey: () => number;
  readonly #totalWeight: number;
  readonly #bases: string[];
  readonly #trace: TraceTemplates | null;
  readonly #drawsPerTarget: number | null;
  #position = 0;

  constructor(plan: AttackPlan) {
    if (plan.requests.length === 0) throw new RangeError("Cannot generate targets: the plan has no requests");
    for (const template of plan.requests) {
      if (!(template.weight > 0)) {
        throw new RangeError(
          `Cannot generate targets: weight of ${template.name} must be > 0: received ${template.weight}`,
        );
      }
    }
    this.#plan = plan;
    this.#random = seededRandom(plan.keys.seed);
    const keys = plan.keys.distribution;
    this.#trace = keys.kind === "trace" ? traceTemplates(plan, heldTrace(keys)) : null;
    this.#nextKey = keys.kind === "trace" ? () => 0 : keySampler(plan.keys, this.#draw);
    this.#drawsPerTarget = drawsPerTarget(plan);
    this.#totalWeight = plan.requests.reduce((sum, template) => sum + template.weight, 0);
    const urls = plan.instanceUrls ?? [plan.baseUrl];
    if (urls.length === 0 || (plan.instanceUrls && urls[0] !== plan.baseUrl)) {
      throw new RangeError(
        `Cannot generate targets: instanceUrls must start with baseUrl ${plan.baseUrl}: received ${JSON.stringify(urls)}`,
      );
    }
    this.#bases = urls.map((url) => url.replace(/\/+$/, ""));
  }

  /** Positions handed out so far (the next `take` starts here). */
  get position(): number {
    return this.#position;
  }

  /**
   * Moves to `position` without drawing the targets before it: each target takes the same number of draws,
   * so the generator's state there is known (k6 asks for each iteration's target by its number). A mix
   * whose templates take different numbers of draws cannot seek: take it in order.
   */
  seek(position: number): void {
    if (!(Number.isInteger(position) && position >= 0)) {
      throw new RangeError(
        `Cannot seek the stream: position must be a non-negative integer: received ${position}`,
      );
    }
    if (this.#trace !== null) {
      // A trace request's key is its position's; only variables would draw.
      if (this.#plan.requests.some((template) => template.vars !== undefined)) {
        throw new RangeError(
          `Cannot seek the trace stream of ${this.#plan.name}: its templates draw variables`,
        );
      }
    } else {
      const draws = this.#drawsPerTarget;
      if (draws === null) {
        throw new RangeError(
          `Cannot seek the stream of ${this.#plan.name}: its templates differ in {id} or in their variables, so a target's draws depend on the ones before it`,
        );
      }
      this.#random = seededRandom(this.#plan.keys.seed, position * draws);
      if (this.#plan.keys.distribution.kind === "sequential") {
        const keyed = usesId(this.#plan.requests[0] as RequestTemplate);
        this.#nextKey = keySampler(this.#plan.keys, this.#draw, keyed ? position : 0);
      }
    }
    this.#position = position;
  }

  /** Target `position` of the stream, as `take` would hand it out there. */
  at(position: number): Target {
    this.seek(position);
    return this.take(1)[0] as Target;
  }

  /** The next `count` targets of the stream. */
  take(count: number): Target[] {
    if (!(Number.isInteger(count) && count >= 0)) {
      throw new RangeError(`Cannot take targets: count must be a non-negative integer: received ${count}`);
    }
    // A trace ends where it ends: the list is shorter, and a tool that runs past it re-sends (judged).
    const n = this.#trace
      ? Math.max(0, Math.min(count, this.#trace.trace.keyIndex.length - this.#position))
      : count;
    const targets: Target[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const position = this.#position + i;
      const instance = position % this.#bases.length;
      targets[i] = this.#trace ? this.#fromTrace(this.#trace, position, instance) : this.#next(instance);
    }
    this.#position += n;
    return targets;
  }

  /** Request `position` of the trace: its key as an id, its operation as the read or the write template. */
  #fromTrace(trace: TraceTemplates, position: number, instance: number): Target {
    const template = trace.trace.op[position] === 0 ? trace.read : (trace.write as RequestTemplate);
    return this.#target(template, (trace.trace.keyIndex[position] as number) + 1, instance);
  }

  #next(instance: number): Target {
    const requests = this.#plan.requests;
    let pick = this.#random() * this.#totalWeight;
    let template = requests[requests.length - 1] as RequestTemplate;
    for (const candidate of requests) {
      pick -= candidate.weight;
      if (pick < 0) {
        template = candidate;
        break;
      }
    }
    return this.#target(template, usesId(template) ? this.#nextKey() : null, instance);
  }

  /** `template` filled with `key` as `{id}` and a draw for each of its variables, for `instance`. */
  #target(template: RequestTemplate, key: number | null, instance: number): Target {
    const values: Record<string, number> = {};
    if (key !== null) values.id = key;
    for (const [name, range] of Object.entries(template.vars ?? {})) {
      values[name] = range.min + Math.floor(this.#random() * (range.max - range.min + 1));
    }
    return {
      template: template.name,
      method: template.method,
      url: (this.#bases[instance] as string) + fill(template.path, values),
      instance,
      key,
      body: template.body === undefined ? null : fill(template.body, values),
    };
  }
}

/**
 * How many draws of the plan's generator each target takes, when every target takes the same (a template
 * pick, the key's draws if it has `{id}`, one per variable), else null: a trace, or a mix whose templates
 * differ in `{id}` or in their variables.
 */
export function drawsPerTarget(plan: AttackPlan): number | null {
  const keys = plan.keys.distribution;
  if (keys.kind === "trace" || plan.requests.length === 0) return null;
  const shapes = new Set(
    plan.requests.map((template) => `${usesId(template)}:${Object.keys(template.vars ?? {}).length}`),
  );
  if (shapes.size !== 1) return null;
  const template = plan.requests[0] as RequestTemplate;
  return 1 + (usesId(template) ? KEY_DRAWS[keys.kind] : 0) + Object.keys(template.vars ?? {}).length;
}

/** A trace plan's trace and the templates its reads and its writes or deletes become. */
interface TraceTemplates {
  trace: CompactTrace;
  read: RequestTemplate;
  write: RequestTemplate | null;
}

/** The first template of `method` with `{id}` in its path, or null. */
function templateWithId(requests: RequestTemplate[], method: string): RequestTemplate | null {
  return requests.find((template) => template.method === method && template.path.includes("{id}")) ?? null;
}

/**
 * Why an attack's templates cannot replay `trace`, or null: its reads need a GET with `{id}` in the path,
 * its writes and deletes (when it has any) a PUT with one.
 */
export function traceTemplatesRefusal(
  attack: { name: string; requests: RequestTemplate[] },
  trace: CompactTrace,
): string | null {
  const source = `${trace.source.path} (${trace.source.format})`;
  if (templateWithId(attack.requests, "GET") === null) {
    return `Cannot replay trace ${source}: the attack ${attack.name} has no GET template with {id} for its reads`;
  }
  if (templateWithId(attack.requests, "PUT") === null && trace.op.some((op) => op !== 0)) {
    return `Cannot replay trace ${source}: it has writes or deletes and the attack ${attack.name} has no PUT template with {id} to replay them as: replay it with your_workload, whose attack has one, or a trace of reads only`;
  }
  return null;
}

/** The first GET and the first PUT template with `{id}` in the path; a trace with writes needs the PUT. */
function traceTemplates(plan: AttackPlan, trace: CompactTrace): TraceTemplates {
  const refusal = traceTemplatesRefusal(plan, trace);
  if (refusal !== null) throw new RangeError(refusal);
  return {
    trace,
    read: templateWithId(plan.requests, "GET") as RequestTemplate,
    write: templateWithId(plan.requests, "PUT"),
  };
}

/** The first `count` targets of the plan's stream (default `plan.targetCount`): the same for the same plan. */
export function generateTargets(plan: AttackPlan, count = plan.targetCount): Target[] {
  return new TargetStream(plan).take(count);
}
