/**
 * How much of a plan's target stream each run gets, which positions a run actually sent (as the tool
 * itself tells), and what a fresh stream would have looked like: the expected distinct keys of n draws
 * (FACTS §5: D(n) = Σ_k 1 − (1 − p_k)^n). These let a row say whether its measured run was a fresh draw.
 */
import type { AttackPlan, RequestTemplate, SentTargets } from "./attack_plan.ts";
import { rankProbabilities, seededRandom } from "./targets.ts";

/**
 * A closed model's rate is unknown before it runs: its warm-up list is sized for this rate (above a bare
 * `Bun.serve` on the lab's 2-core machine, ~80k rps), its measured list for CLOSED_RATE_MARGIN × the
 * warm-up's rate (a warm-up is often slower: the server's JIT and pools are still cold), never above it.
 * 3 was too little once: a 1.3 s autocannon warm-up ran at 8.1k rps and the measured run at 26k (3.2×), so
 * the run re-sent 13% of its list (caught, and the row invalid, but a lost row).
 */
export const CLOSED_RATE_BOUND_RPS = 100_000;
export const CLOSED_RATE_MARGIN = 5;
/** The most targets one run's list may hold (~100–200 MB of tool input at most). */
export const MAX_LIST_TARGETS = 3_000_000;
/**
 * A tool that samples its list with replacement (oha) re-sends some positions; the list is made long enough
 * that the expected share of re-sent requests stays below this. A re-sent position repeats a key a fresh draw
 * would have had to find, so the hit-ratio bias is at most this share times the miss ratio (≤ 0.002 here).
 */
export const SAMPLED_REUSE_TOLERANCE = 0.01;

/** The most requests a run of `durationS` can send: the arrival rate's integral, or the closed bound. */
export function requestsBound(plan: AttackPlan, durationS: number, closedRateRps?: number | null): number {
  const model = plan.model;
  if (model.kind === "open") return Math.ceil(model.rateRps * durationS);
  if (model.kind === "ramping") {
    if (durationS !== plan.durationS) {
      // A ramping warm-up holds the start rate (or the first stage's target), as the k6 module runs it.
      const rate = model.startRps > 0 ? model.startRps : (model.stages[0]?.targetRps ?? 0);
      return Math.ceil(rate * durationS);
    }
    let from = model.startRps;
    let requests = 0;
    for (const stage of model.stages) {
      requests += ((from + stage.targetRps) / 2) * stage.durationS;
      from = stage.targetRps;
    }
    return Math.ceil(requests);
  }
  const bound = plan.maxRateRps ?? CLOSED_RATE_BOUND_RPS;
  return Math.ceil(Math.min(closedRateRps ?? bound, bound) * durationS);
}

/**
 * A list for a tool that sends its targets in order (or in stripes): the bound plus a margin, at most
 * `maxTargets` (a script that generates its stream holds no list, so nothing caps it).
 */
export function replayListSize(requests: number, maxTargets = MAX_LIST_TARGETS): number {
  return Math.min(maxTargets, requests + Math.ceil(requests * 0.01) + 16);
}

/** Expected share of `draws` uniform draws with replacement from `list` positions that repeat a position. */
export function expectedSampledReuse(list: number, draws: number): number {
  if (draws <= 0) return 0;
  const distinct = list * -Math.expm1(draws * Math.log1p(-1 / list));
  return 1 - distinct / draws;
}

/**
 * The shortest list whose expected re-sent share for `requests` uniform draws is within the tolerance, or
 * null when that list would exceed MAX_LIST_TARGETS.
 */
export function sampledListSize(requests: number): number | null {
  if (requests <= 1) return Math.max(1, requests);
  let low = requests;
  let high = Math.max(requests, Math.ceil(requests / SAMPLED_REUSE_TOLERANCE));
  while (expectedSampledReuse(high, requests) > SAMPLED_REUSE_TOLERANCE) high *= 2;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (expectedSampledReuse(mid, requests) <= SAMPLED_REUSE_TOLERANCE) high = mid;
    else low = mid + 1;
  }
  return low > MAX_LIST_TARGETS ? null : low;
}

/** Length of stripe `k` of `stripes` over a list of `list` targets (targets k, k+S, k+2S, …). */
function stripeLength(list: number, stripes: number, k: number): number {
  return k >= list ? 0 : Math.ceil((list - k) / stripes);
}

/** Requests that re-sent a position already sent in the same run: exact, or a sampler's expectation. */
export function reusedPositions(sent: SentTargets, list: number): number {
  if (sent.kind === "prefix") return Math.max(0, sent.count - list);
  // A sampler's re-sent count is an expectation (oha does not say which lines it drew), left unrounded.
  if (sent.kind === "sampled") return expectedSampledReuse(list, sent.count) * sent.count;
  let reused = 0;
  sent.counts.forEach((count, k) => {
    reused += Math.max(0, count - stripeLength(list, sent.counts.length, k));
  });
  return reused;
}

export function sentCount(sent: SentTargets): number {
  return sent.kind === "stripes" ? sent.counts.reduce((a, b) => a + b, 0) : sent.count;
}

/**
 * The list positions a run sent, in (approximately) the order it sent them: a prefix in order (wrapping),
 * stripes interleaved round-robin (each wrapping within itself), a sampler's draws emulated from `seed`
 * (oha does not say which lines it drew; the emulation has the same distribution).
 */
export function sentPositions(sent: SentTargets, list: number, seed = 1): Int32Array {
  if (list <= 0) return new Int32Array(0);
  if (sent.kind === "prefix") {
    const positions = new Int32Array(sent.count);
    for (let i = 0; i < sent.count; i++) positions[i] = i % list;
    return positions;
  }
  if (sent.kind === "sampled") {
    const random = seededRandom(seed);
    const positions = new Int32Array(sent.count);
    for (let i = 0; i < sent.count; i++) positions[i] = Math.floor(random() * list);
    return positions;
  }
  const stripes = sent.counts.length;
  const positions = new Int32Array(sentCount(sent));
  const longest = Math.max(0, ...sent.counts);
  let i = 0;
  for (let j = 0; j < longest; j++) {
    for (let k = 0; k < stripes; k++) {
      if (j >= (sent.counts[k] as number)) continue;
      const length = stripeLength(list, stripes, k);
      if (length === 0) continue;
      positions[i++] = k + (j % length) * stripes;
    }
  }
  return positions.subarray(0, i);
}

/** The probability of every distinct GET resource a request of the plan can ask for (PUTs ask for none). */
function getKeyProbabilities(plan: AttackPlan): { probabilities: Float64Array[]; weights: number[] } {
  const total = plan.requests.reduce((sum, template) => sum + template.weight, 0);
  const probabilities: Float64Array[] = [];
  const weights: number[] = [];
  for (const template of plan.requests) {
    if (template.method !== "GET") continue;
    let keys = usesId(template) ? rankProbabilities(plan.keys) : new Float64Array([1]);
    for (const range of Object.values(template.vars ?? {})) keys = outer(keys, range.max - range.min + 1);
    probabilities.push(keys);
    weights.push(template.weight / total);
  }
  return { probabilities, weights };
}

/** Whether a GET's resource (its path, not its body) holds the drawn key. */
function usesId(template: RequestTemplate): boolean {
  return template.path.includes("{id}");
}

/** Each probability split evenly over `n` values of one more uniform variable. */
function outer(p: Float64Array, n: number): Float64Array {
  const out = new Float64Array(p.length * n);
  for (let i = 0; i < p.length; i++) out.fill((p[i] as number) / n, i * n, (i + 1) * n);
  return out;
}

/**
 * Distinct GET resources (URLs) expected among `requests` requests of a fresh stream, with the standard
 * deviation bound used as tolerance. `sequential` keys are not random: a pass of n sends min(n, keyspace).
 */
export function expectedDistinctKeys(plan: AttackPlan, requests: number): { mean: number; sd: number } {
  const instances = plan.instanceUrls?.length ?? 1;
  if (instances > 1) return expectedDistinctKeysPerInstance(plan, requests, instances);
  if (plan.keys.distribution.kind === "sequential") {
    const gets = plan.requests.filter((template) => template.method === "GET" && usesId(template));
    if (gets.length === plan.requests.length && gets.every((template) => !template.vars)) {
      return { mean: Math.min(requests, plan.keys.keyspace), sd: 0 };
    }
  }
  return expectedDistinctDraws(plan, requests);
}

/**
 * Several instances, each counting its own distinct keys (the server's /stats, summed by the runner): the
 * stream's positions are dealt round-robin, so instance i gets ⌊(n + N − 1 − i) / N⌋ of n requests, each an
 * independent draw of the same distribution (sequential keys: every N-th key of the cycle).
 */
function expectedDistinctKeysPerInstance(
  plan: AttackPlan,
  requests: number,
  instances: number,
): { mean: number; sd: number } {
  const single: AttackPlan = { ...plan };
  delete single.instanceUrls;
  let mean = 0;
  let variance = 0;
  for (let i = 0; i < instances; i++) {
    const share = Math.floor((requests + instances - 1 - i) / instances);
    const part = expectedDistinctKeys(single, share);
    if (plan.keys.distribution.kind === "sequential" && part.sd === 0) {
      // Keys i+1, i+1+N, … wrapping at the keyspace: a cycle of keyspace / gcd(N, keyspace) keys.
      const cycle = plan.keys.keyspace / gcd(instances, plan.keys.keyspace);
      mean += Math.min(share, cycle);
      continue;
    }
    mean += part.mean;
    variance += part.sd ** 2;
  }
  return { mean, sd: Math.sqrt(variance) };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Distinct GET resources among `requests` independent draws of the plan's mix and key distribution. */
function expectedDistinctDraws(plan: AttackPlan, requests: number): { mean: number; sd: number } {
  const { probabilities, weights } = getKeyProbabilities(plan);
  let mean = 0;
  // Σ q(1 − q) over independent indicators bounds the variance (occupancy indicators are negatively
  // correlated), so it is a safe tolerance.
  let variance = 0;
  probabilities.forEach((keys, t) => {
    const weight = weights[t] as number;
    for (let k = 0; k < keys.length; k++) {
      const p = weight * (keys[k] as number);
      const q = -Math.expm1(requests * Math.log1p(-p));
      mean += q;
      variance += q * (1 - q);
    }
  });
  return { mean, sd: Math.sqrt(variance) };
}

/** Allowed |measured − expected| distinct keys: 3%, or four standard deviations on small counts. */
export function distinctKeysTolerance(expected: { mean: number; sd: number }): number {
  return Math.max(0.03 * expected.mean, 4 * expected.sd, 1);
}

/**
 * How many stream targets to hand a tool that walks its list as `sends` for a run of `durationS`, or why no
 * list within MAX_LIST_TARGETS keeps that run a fresh stream.
 */
export function listSize(
  sends: "prefix" | "stripes" | "sampled",
  plan: AttackPlan,
  durationS: number,
  closedRateRps?: number | null,
): number | string {
  const requests = requestsBound(plan, durationS, closedRateRps);
  if (sends !== "sampled") return replayListSize(requests);
  // The list that keeps re-sent targets within the tolerance, or the longest list allowed when the attack
  // declares it may re-send more (saturation's top steps), as long as the expectation stays within that.
  const size = sampledListSize(requests) ?? MAX_LIST_TARGETS;
  const allowed = allowedReuseRatio(sends, plan);
  const reuse = expectedSampledReuse(size, requests);
  if (reuse <= allowed) return size;
  return (
    `it draws each request's URL uniformly with replacement from its file: even ${MAX_LIST_TARGETS} lines ` +
    `would re-send ${(reuse * 100).toFixed(1)}% of the ${requests} requests a ${durationS} s run can send, ` +
    `over the ${(allowed * 100).toFixed(1)}% the attack allows`
  );
}

/** The re-sent share a measured run may have: what the plan declares, and at least a sampler's tolerance. */
export function allowedReuseRatio(sends: "prefix" | "stripes" | "sampled", plan: AttackPlan): number {
  const declared = plan.allowedReuseRatio ?? 0;
  return sends === "sampled" ? Math.max(declared, SAMPLED_REUSE_TOLERANCE) : declared;
}
