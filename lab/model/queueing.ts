/**
 * Waiting for one of c servers (a pool's connections, a machine's cores, Redis's one thread) when requests
 * arrive at random: the M/M/c queue (Erlang C). It is the standard first approximation for a pool: exact
 * for Poisson arrivals and exponential holding times, and a fair guide otherwise (docs/advise.md "Queueing").
 */

/** The probability that an arrival waits, for c servers offered `load` = λ × hold (in erlangs); 1 at or past c. */
export function erlangC(c: number, load: number): number {
  if (!(c >= 1) || load <= 0) return 0;
  if (load >= c) return 1;
  // Erlang B by its stable recurrence, then C from B.
  let b = 1;
  for (let k = 1; k <= c; k++) b = (load * b) / (k + load * b);
  const rho = load / c;
  return b / (1 - rho + rho * b);
}

export interface Wait {
  /** Utilisation λ × hold ÷ c. */
  rho: number;
  /** The probability of waiting at all. */
  pWait: number;
  /** Mean wait, ms (every arrival's, the ones that do not wait counted as 0). */
  meanMs: number;
  /** The waiting time's rate once waiting, per ms: P(W > t) = pWait × e^(−rate·t). */
  ratePerMs: number;
}

/** The wait at `c` servers each held `holdMs` per request, `rps` requests a second; null at or past saturation. */
export function waitOf(c: number, holdMs: number, rps: number): Wait | null {
  if (!(holdMs > 0) || !(rps > 0))
    return { rho: 0, pWait: 0, meanMs: 0, ratePerMs: Number.POSITIVE_INFINITY };
  const load = (rps * holdMs) / 1_000;
  if (load >= c) return null;
  const pWait = erlangC(c, load);
  const ratePerMs = (c - load) / holdMs;
  return { rho: load / c, pWait, meanMs: pWait / ratePerMs, ratePerMs };
}

/** The wait's q-quantile (0..1), ms. */
export function waitQuantileMs(wait: Wait, q: number): number {
  const tail = 1 - q;
  if (wait.pWait <= tail) return 0;
  return Math.log(wait.pWait / tail) / wait.ratePerMs;
}

/**
 * The wait as weighted points for a mixture (lab/model/histogram.ts): no wait with 1 − pWait, and the
 * exponential tail at `steps` equal-probability points.
 */
export function waitPoints(wait: Wait, steps = 24): [ms: number, weight: number][] {
  const points: [number, number][] = [[0, 1 - wait.pWait]];
  if (wait.pWait <= 0) return points;
  for (let i = 0; i < steps; i++) {
    const u = (i + 0.5) / steps; // the midpoint of each slice of the conditional tail
    points.push([-Math.log(1 - u) / wait.ratePerMs, wait.pWait / steps]);
  }
  return points;
}
