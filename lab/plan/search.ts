/**
 * Cells chosen at run time. An experiment with a `search` (capacity_check's bisection) runs its planned cells
 * first, then round by round asks each strategy's search for its next attacks from the rows so far, each run
 * as one cell on a fresh server, until every search is done or has had its most steps. The rows stay ordinary
 * rows, one per cell, appended as they are measured; the search only chooses what runs next.
 */
import type { StrategyName } from "../../server_config.ts";
import type { Cell, Experiment, ExperimentAttack } from "./experiment_plan.ts";
import { type Overrides, overriddenAttack } from "./overrides.ts";
import { type SettledCell, settleCells } from "./settled_cells.ts";

/** A results row as a search reads it (lab/results/csv.ts's CsvRow). */
export type SearchRow = Readonly<Record<string, string | number | boolean | null>>;

export interface Search {
  /** How its steps are chosen, for the printed plan: their rates are known only at run time. */
  plan: string;
  /** The most cells it chooses for one strategy: with the planned cells, the most a run can take. */
  maxStepsPerStrategy: number;
  /** Seconds of load in each chosen cell (warm-up + measured), for the plan's bound. */
  stepS: number;
  /** The strategy's next attacks from the run's rows so far (every strategy's, planned and chosen); [] when done. */
  next: (strategy: StrategyName, rows: readonly SearchRow[]) => ExperimentAttack[];
  /** What a row says as a step (whether it held), added to its `warnings`; null for a row that is no step. */
  verdict: (row: SearchRow) => string | null;
  /** Once every search is done (never after an interrupt): what the run writes beside its CSV. */
  finish?: (
    rows: readonly SearchRow[],
    run: { csvPath: string; runId: string; log: (line: string) => void },
  ) => void;
}

/** An experiment whose planned attacks are followed by attacks chosen at run time. */
export interface SearchedExperiment extends Experiment {
  search: Search;
}

export function searchOf(experiment: Experiment): Search | null {
  return (experiment as Partial<SearchedExperiment>).search ?? null;
}

/** The most cells a run of `planned` can take: `10`, or with a search `≤ 110`. */
export function cellsBound(planned: readonly Cell[], experiment: Experiment): string {
  const search = searchOf(experiment);
  if (search === null) return String(planned.length);
  return `≤ ${planned.length + experiment.strategies.length * search.maxStepsPerStrategy}`;
}

/** What `--dry-run` says of the chosen cells, or null without a search. */
export function describeSearch(experiment: Experiment): string | null {
  const search = searchOf(experiment);
  if (search === null) return null;
  const most = experiment.strategies.length * search.maxStepsPerStrategy;
  return (
    `then cells chosen at run time, one attack on a fresh server each: ${search.plan}; at most ` +
    `${search.maxStepsPerStrategy} a strategy, ${most} in all (${most * search.stepS} s of load at most)`
  );
}

/**
 * The planned cells, then the chosen ones a round at a time: a round asks every strategy (in the experiment's
 * order) for its next attacks and runs them interleaved (each strategy's first, then each one's second); a
 * strategy is no longer asked once it has had its most steps. Lazy: a round is asked for only when the one
 * before has its rows in `rows`. A chosen attack takes the command line's overrides, all but the rate.
 */
export function* searchedCells(
  planned: SettledCell[],
  experiment: Experiment,
  run: { rows: readonly SearchRow[]; urlsFor: (apart: boolean) => string[]; overrides: Overrides },
): Generator<SettledCell> {
  yield* planned;
  const search = searchOf(experiment);
  if (search === null) return;
  const taken = new Map<StrategyName, number>();
  let index = Math.max(0, ...planned.map((cell) => cell.index));
  for (;;) {
    const round = experiment.strategies.map((strategy) => {
      const left = search.maxStepsPerStrategy - (taken.get(strategy) ?? 0);
      const attacks = left > 0 ? search.next(strategy, run.rows).slice(0, left) : [];
      taken.set(strategy, (taken.get(strategy) ?? 0) + attacks.length);
      return attacks.map((attack) => overriddenAttack(attack, { ...run.overrides, rateRps: undefined }));
    });
    const chosen: Cell[] = [];
    for (let i = 0; i < Math.max(0, ...round.map((attacks) => attacks.length)); i++) {
      experiment.strategies.forEach((strategy, s) => {
        const attack = round[s]?.[i];
        if (!attack) return;
        // An attack chosen again (a step run twice) is its next repeat: each row and timeline second its own.
        const before = run.rows.filter((row) => row.strategy === strategy && row.attack === attack.name);
        chosen.push({ index: ++index, strategy, repeat: before.length + 1, attacks: [attack] });
      });
    }
    if (chosen.length === 0) return;
    yield* settleCells(experiment, chosen, run.urlsFor);
  }
}

/** The row's step verdict added to its warnings (none for a row that is no step). */
export function withVerdict(experiment: Experiment, row: Record<string, unknown>): void {
  const verdict = searchOf(experiment)?.verdict(row as SearchRow) ?? null;
  if (verdict !== null) row.warnings = row.warnings ? `${row.warnings}; ${verdict}` : verdict;
}
