/**
 * A run's replayed curves: each trace attack's cells note the segment they sent, and at the run's end the
 * curves of that segment go to `results/<experiment>.curves.csv` (lab/results/curves_csv.ts), once per
 * trace attack. The cells of one attack send the same segment up to a request or two (k6 may send one
 * more); the segment most of them sent is drawn (the first, on a tie), and its cell's l1_max_entries marked.
 */
import type { AttackPlan } from "../plan/attack_plan.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import { appendCurves, type CurveRow, curvesPath } from "../results/curves_csv.ts";
import { heldTrace } from "../trace/loaded.ts";
import { MRC_METHODS } from "../trace/mrc.ts";
import { type ReplayedCurves, type ReplayedSegment, replayedCurves } from "../trace/replayed_curves.ts";

interface Noted {
  plan: AttackPlan;
  l1MaxEntries: number;
  segment: ReplayedSegment;
}

/** The segments a run's trace attacks sent, by attack name, in the order the cells ran. */
export class ReplayedSegments {
  readonly #byAttack = new Map<string, Noted[]>();

  /** Notes what a cell sent of a trace attack (other attacks, and cells whose tool said nothing, are ignored). */
  note(attack: ExperimentAttack, plan: AttackPlan, cell: SettledCell, segment: ReplayedSegment | null): void {
    if (segment === null || plan.keys.distribution.kind !== "trace") return;
    const noted = this.#byAttack.get(attack.name) ?? [];
    noted.push({ plan, l1MaxEntries: cell.settings.l1MaxEntries, segment });
    this.#byAttack.set(attack.name, noted);
  }

  /** Each trace attack's most common segment. */
  chosen(): { attack: string; noted: Noted }[] {
    return [...this.#byAttack].map(([attack, noted]) => {
      const counts = new Map<string, { count: number; first: Noted }>();
      for (const one of noted) {
        const key = JSON.stringify(one.segment);
        const entry = counts.get(key) ?? { count: 0, first: one };
        entry.count++;
        counts.set(key, entry);
      }
      let best = counts.values().next().value as { count: number; first: Noted };
      for (const entry of counts.values()) if (entry.count > best.count) best = entry;
      return { attack, noted: best.first };
    });
  }
}

/** The curves as rows of the curves file. */
export function curveRows(
  ids: { runId: string; experiment: string; attack: string },
  curves: ReplayedCurves,
): CurveRow[] {
  return MRC_METHODS.flatMap((method) =>
    curves.curves[method].map((point) => ({
      run_id: ids.runId,
      experiment: ids.experiment,
      attack: ids.attack,
      method,
      capacity_entries: point.entries,
      capacity_label: point.label,
      configured: point.configured,
      hit_ratio: point.hitRatio,
      byte_hit_ratio: point.byteHitRatio,
      reads: curves.reads,
      warmup_requests: curves.warmupRequests,
      from_position: curves.fromPosition,
      to_position: curves.toPosition,
    })),
  );
}

/**
 * Computes and appends the curves of every trace attack the run measured; returns the rows written. A
 * segment whose curves cannot be drawn (no measured read) is logged and left out, never written as zeros.
 */
export function writeReplayedCurves(
  segments: ReplayedSegments,
  run: { csvPath: string; runId: string; experiment: string; log: (line: string) => void },
): CurveRow[] {
  const rows: CurveRow[] = [];
  for (const { attack, noted } of segments.chosen()) {
    const keys = noted.plan.keys.distribution;
    if (keys.kind !== "trace") continue;
    try {
      const curves = replayedCurves(heldTrace(keys), noted.segment, noted.l1MaxEntries);
      rows.push(...curveRows({ runId: run.runId, experiment: run.experiment, attack }, curves));
    } catch (error) {
      run.log(`no replayed curves for ${attack}: ${(error as Error).message}`);
    }
  }
  if (rows.length === 0) return rows;
  const path = curvesPath(run.csvPath);
  try {
    appendCurves(path, rows);
  } catch (error) {
    // The rows are written already: a curves file that cannot take them costs the curves, not the run.
    run.log(`replayed curves not written: ${(error as Error).message}`);
    return [];
  }
  run.log(`replayed curves appended to ${path}`);
  return rows;
}
