/**
 * A capacity search's next step: the highest rate at which a step holds (what holds is the caller's: a p99
 * under its target, errors within the limit, no dropped load), found by bisection. It starts at the predicted
 * capacity and steps outwards (× widen, then × widen², × widen⁴, …) until one rate holds and a higher one
 * breaks, then tries the bracket's geometric middle until high − low ≤ tolerance × low, within a step cap.
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
  const broken = steps.filter((step) => !step.held).map((step) => step.rateRps);
  const low = held.length > 0 ? Math.max(...held) : null;
  const high = broken.length > 0 ? Math.min(...broken) : null;
  const answer = (reason: string): Bisection => ({
    done: true,
    heldRps: low,
    brokenRps: high,
    steps: steps.length,
    reason,
  });
  if (low !== null && high !== null && low >= high)
    return answer(`not monotone: held at ${low} rps, above a break at ${high} rps`);
  if (low !== null && high !== null && high - low <= tolerance * low)
    return answer(`bracketed to ${Math.round(tolerance * 100)}%`);
  if (low === null && high !== null && high <= minRps)
    return answer(`broke at the lowest rate, ${minRps} rps`);
  if (high === null && low !== null && low >= maxRps)
    return answer(`held at the highest rate, ${maxRps} rps`);
  if (steps.length >= maxSteps) return answer(`step cap: ${maxSteps} steps`);
  let next: number;
  if (low === null && high === null) next = options.startRps;
  // Only breaks so far: step down from the lowest, further each time.
  else if (low === null) next = (high as number) / widen ** (2 ** (broken.length - 1));
  // Only holds so far: step up from the highest.
  else if (high === null) next = low * widen ** (2 ** (held.length - 1));
  else next = Math.sqrt(low * high);
  const rateRps = Math.round(Math.min(maxRps, Math.max(minRps, next)));
  // Rounded onto a rate already tried: the bracket is as narrow as whole rates make it.
  if (steps.some((step) => step.rateRps === rateRps)) return answer("bracketed to 1 rps");
  return { done: false, rateRps };
}
