/**
 * A capacity search's next step: the highest rate at which a step holds (what holds is the caller's: a p99
 * under its target, errors within the limit, no dropped load), found by bisection. It starts at the predicted
 * capacity and steps outwards (× widen, then × widen², × widen⁴, …) until one rate holds and a higher one
 * breaks, then tries the bracket's geometric middle until high − low ≤ tolerance × low, within a step cap.
 * With `confirm` 2, a break that would bound the answer is run again first, and a rate that held once counts
 * as held: one stall in a short step can break a p99 that the rate holds (docs/advise.md "Capacity").
 * Pure: the steps so far in, the next rate or the answer out, so a search can be resumed from rows.
 */

export interface Step {
  rateRps: number;
  held: boolean;
}

export interface BisectOptions {
  /** The first rate tried: the predicted capacity. */
  startRps: number;
  /** Done when high − low ≤ tolerance × low (0.05: to 5%). */
  tolerance: number;
  /** The first step outwards from a bracket's one side (1.25); each further one squares it. */
  widen: number;
  /** The most steps in all, the first included. */
  maxSteps: number;
  /** The lowest and highest rates a step may ask for (the tool's and the machine's limits). */
  minRps: number;
  maxRps: number;
  /** Breaks a rate needs before it bounds the answer (default 1: the first counts). */
  confirm?: number;
}

export type Bisection =
  | { done: false; rateRps: number }
  | {
      done: true;
      /** The highest rate that held and the lowest that broke (null: none did). */
      heldRps: number | null;
      brokenRps: number | null;
      steps: number;
      reason: string;
    };

/** The next rate to try after `steps`, or the answer with why the search ends. */
export function bisect(steps: readonly Step[], options: BisectOptions): Bisection {
  const { tolerance, widen, maxSteps, minRps, maxRps } = options;
  if (!(widen > 1) || !(tolerance > 0) || !(minRps > 0) || !(maxRps >= minRps)) {
    throw new RangeError(
      `Cannot bisect: widen > 1, tolerance > 0 and 0 < minRps ≤ maxRps: received ${JSON.stringify(options)}`,
    );
  }
  const held = steps.filter((step) => step.held).map((step) => step.rateRps);
  // A rate that held once is held; the others broke, `breaks` times.
  const broken = steps.filter((step) => !step.held && !held.includes(step.rateRps)).map((s) => s.rateRps);
  const low = held.length > 0 ? Math.max(...held) : null;
  const high = broken.length > 0 ? Math.min(...broken) : null;
  const breaks = broken.filter((rate) => rate === high).length;
  // Before a break bounds the answer, it is run again (up to `confirm` times in all).
  const unconfirmed = high !== null && breaks < (options.confirm ?? 1) && steps.length < maxSteps;
  const answer = (reason: string): Bisection => ({
    done: true,
    heldRps: low,
    brokenRps: high,
    steps: steps.length,
    reason,
  });
  if (low !== null && high !== null && low >= high) {
    if (unconfirmed) return { done: false, rateRps: high };
    return answer(`not monotone: held at ${low} rps, above a break at ${high} rps`);
  }
  if (low !== null && high !== null && high - low <= tolerance * low) {
    if (unconfirmed) return { done: false, rateRps: high };
    return answer(`bracketed to ${Math.round(tolerance * 100)}%`);
  }
  if (low === null && high !== null && high <= minRps)
    return answer(`broke at the lowest rate, ${minRps} rps`);
  if (high === null && low !== null && low >= maxRps)
    return answer(`held at the highest rate, ${maxRps} rps`);
  if (steps.length >= maxSteps) return answer(`step cap: ${maxSteps} steps`);
  let next: number;
  if (low === null && high === null) next = options.startRps;
  // Only breaks so far: step down from the lowest, further each time.
  else if (low === null) next = (high as number) / widen ** (2 ** (new Set(broken).size - 1));
  // A rate that broke and then held: the wall is near it, so the next step is the tolerance above.
  else if (high === null && steps.some((step) => !step.held)) next = Math.floor(low * (1 + tolerance));
  // Only holds so far: step up from the highest.
  else if (high === null) next = low * widen ** (2 ** (held.length - 1));
  else next = Math.sqrt(low * high);
  const rateRps = Math.round(Math.min(maxRps, Math.max(minRps, next)));
  // Rounded onto a rate already tried: the bracket is as narrow as whole rates make it.
  if (steps.some((step) => step.rateRps === rateRps)) {
    if (unconfirmed) return { done: false, rateRps: high as number };
    return answer("bracketed to 1 rps");
  }
  return { done: false, rateRps };
}
