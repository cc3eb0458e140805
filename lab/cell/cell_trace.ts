/**
 * What a cell's simulation is fed: the plan's stream (the same targets at the same positions for every
 * strategy's cells), and the requests each cell's server has seen, warm-up then measured, in time order.
 */
import type { ToolRun } from "../load/run_attack.ts";
import type { AttackPlan, Target } from "../plan/attack_plan.ts";
import { sentPositions } from "../plan/segments.ts";
import { TargetStream } from "../plan/targets.ts";
import { fromTargets, type SimRequest } from "../sim/simulate.ts";

/** The plan's stream, shared by every strategy's cells: the same targets at the same positions. */
export class StreamCache {
  readonly #entries = new Map<string, { stream: TargetStream; targets: Target[] }>();

  /** Targets `start` .. `start + count − 1` of the plan's stream. */
  slice(plan: AttackPlan, start: number, count: number): Target[] {
    const key = JSON.stringify(plan);
    let entry = this.#entries.get(key);
    if (!entry) {
      // A few plans at a time: saturation's steps and cold_start's passes come one after another.
      if (this.#entries.size >= 3) this.#entries.delete(this.#entries.keys().next().value as string);
      entry = { stream: new TargetStream(plan), targets: [] };
      this.#entries.set(key, entry);
    }
    const missing = start + count - entry.targets.length;
    if (missing > 0) for (const target of entry.stream.take(missing)) entry.targets.push(target);
    return entry.targets.slice(start, start + count);
  }
}

/** What one cell carries from attack to attack: the requests its server has seen, for the simulation. */
export interface CellTrace {
  startedMs: number;
  requests: SimRequest[];
}

/**
 * The requests a run sent, as the simulator reads them: the tool's own account of which list positions it
 * sent, spread evenly over its send window from `startMs` (ms since the cell's server started).
 */
export function sentRequests(
  run: ToolRun,
  targets: Target[],
  startMs: number,
  seed: number,
): SimRequest[] | null {
  const sent = run.result.sent;
  if (sent === null) return null;
  const positions = sentPositions(sent, targets.length, seed);
  const spacingMs = ((run.result.durationS ?? run.wallS) * 1_000) / Math.max(1, positions.length);
  const times = new Float64Array(positions.length);
  for (let i = 0; i < positions.length; i++) times[i] = startMs + i * spacingMs;
  return fromTargets(
    Array.from(positions, (position) => targets[position] as Target),
    times,
  );
}

/** Two time-ordered request lists as one. */
export function mergeByTime(a: SimRequest[], b: SimRequest[]): SimRequest[] {
  if (b.length === 0) return a;
  const merged: SimRequest[] = [];
  let j = 0;
  for (const request of a) {
    while (j < b.length && (b[j] as SimRequest).atMs <= request.atMs) merged.push(b[j++] as SimRequest);
    merged.push(request);
  }
  while (j < b.length) merged.push(b[j++] as SimRequest);
  return merged;
}
