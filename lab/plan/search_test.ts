import { describe, expect, test } from "bun:test";
import type { StrategyName } from "../../server_config.ts";
import { cells, type ExperimentAttack } from "./experiment_plan.ts";
import {
  cellsBound,
  describeSearch,
  type Search,
  type SearchedExperiment,
  type SearchRow,
  searchedCells,
  withVerdict,
} from "./search.ts";
import { settleCells } from "./settled_cells.ts";

function attack(name: string, rateRps: number): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps },
    durationS: 5,
    warmupS: 2,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "uniform" }, seed: 1 },
  };
}

/** A search that steps each strategy up by 100 rps until `until` (none stops at 300, local never). */
function experiment(search: Partial<Search> = {}): SearchedExperiment {
  return {
    question: "q",
    expect: "e",
    strategies: ["none", "local"],
    repeats: 1,
    seed: { rows: 1_000, seed: 1, descriptionBytes: 64 },
    attacks: [attack("base", 100)],
    search: {
      plan: "up by 100 rps a step",
      maxStepsPerStrategy: 4,
      stepS: 7,
      next: (strategy: StrategyName, rows: readonly SearchRow[]) => {
        const mine = rows.filter((row) => row.strategy === strategy);
        const last = Number(mine.at(-1)?.offered_rps ?? 0);
        return strategy === "none" && last >= 300 ? [] : [attack(`step_${last + 100}`, last + 100)];
      },
      verdict: (row) => (String(row.attack).startsWith("step_") ? `step held: ${row.attack}` : null),
      ...search,
    },
  };
}

const urlsFor = () => ["http://127.0.0.1:1"];

/** Runs the generator as the runner does: each cell's row appended before the next is asked for. */
function run(exp: SearchedExperiment, overrides = {}) {
  const rows: SearchRow[] = [];
  const ran: string[] = [];
  const planned = settleCells(exp, cells(exp), urlsFor);
  for (const cell of searchedCells(planned, exp, { rows, urlsFor, overrides })) {
    const [one] = cell.attacks as [ExperimentAttack];
    ran.push(`${cell.index} ${cell.strategy} ${one.name} ${one.durationS}s`);
    rows.push({
      strategy: cell.strategy,
      attack: one.name,
      offered_rps: one.model.kind === "open" ? one.model.rateRps : null,
    });
  }
  return ran;
}

describe("cells chosen at run time", () => {
  test("the planned cells run first, then a round per step, the strategies interleaved, each from the rows so far", () => {
    expect(run(experiment())).toEqual([
      "1 none base 5s",
      "2 local base 5s",
      "3 none step_200 5s",
      "4 local step_200 5s",
      "5 none step_300 5s",
      "6 local step_300 5s",
      // none's search is done; local's goes on until its cap, 4 chosen cells.
      "7 local step_400 5s",
      "8 local step_500 5s",
    ]);
  });

  test("a chosen attack takes the command line's duration, never its rate", () => {
    const ran = run(experiment({ maxStepsPerStrategy: 1 }), { durationS: 2, rateRps: 9_999 });
    expect(ran.slice(2)).toEqual(["3 none step_200 2s", "4 local step_200 2s"]);
  });

  test("an attack chosen again (a step run twice) is its next repeat", () => {
    const rows: SearchRow[] = [];
    const again = experiment({ next: () => (rows.length < 4 ? [attack("step_200", 200)] : []) });
    again.strategies = ["none"];
    const planned = settleCells(again, cells(again), urlsFor);
    const repeats: string[] = [];
    for (const cell of searchedCells(planned, again, { rows, urlsFor, overrides: {} })) {
      const [one] = cell.attacks as [ExperimentAttack];
      repeats.push(`${one.name} r${cell.repeat}`);
      rows.push({ strategy: cell.strategy, attack: one.name, offered_rps: 200 });
    }
    expect(repeats).toEqual(["base r1", "step_200 r1", "step_200 r2", "step_200 r3"]);
  });

  test("an experiment without a search runs its planned cells only", () => {
    const { search: _, ...plain } = experiment();
    const planned = settleCells(plain, cells(plain), urlsFor);
    expect([...searchedCells(planned, plain, { rows: [], urlsFor, overrides: {} })]).toEqual(planned);
    expect(cellsBound(cells(plain), plain)).toBe("2");
    expect(describeSearch(plain)).toBeNull();
  });

  test("the plan says the steps are chosen at run time and the most there can be", () => {
    const exp = experiment();
    expect(cellsBound(cells(exp), exp)).toBe("≤ 10");
    expect(describeSearch(exp)).toBe(
      "then cells chosen at run time, one attack on a fresh server each: up by 100 rps a step; at most 4 a strategy, 8 in all (56 s of load at most)",
    );
  });

  test("a step's row gets the search's verdict in its warnings, after any it had", () => {
    const exp = experiment();
    const step: Record<string, unknown> = { attack: "step_200", warnings: null };
    withVerdict(exp, step);
    expect(step.warnings).toBe("step held: step_200");
    const busy: Record<string, unknown> = {
      attack: "step_300",
      warnings: "the load tool used 1.2 of 2 CPUs",
    };
    withVerdict(exp, busy);
    expect(busy.warnings).toBe("the load tool used 1.2 of 2 CPUs; step held: step_300");
    const base: Record<string, unknown> = { attack: "base", warnings: null };
    withVerdict(exp, base);
    expect(base.warnings).toBeNull();
  });
});
