/** What the runner tests share: the services on a seeded test database, and a quiet run read back as rows. */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import type { SeedPlan } from "../../seed/seed.ts";
import type { Experiment, ExperimentAttack } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { type RunOptions, runExperiment } from "./run_experiment.ts";

/** The runner tests' seed: small enough to load in a second. */
export const TEST_SEED: SeedPlan = { rows: 2_000, seed: 7, descriptionBytes: 64 };

/** The test services, with the database seeded with `plan` (a database of its own, see testDatabaseUrl). */
export async function seededServices(plan: SeedPlan = TEST_SEED): Promise<Services> {
  return { ...(await testServices()), databaseUrl: await testDatabaseUrl(plan) };
}

/** A short run of detail reads: open 300 rps, 1 s warm-up + 2 s, uniform over 300 keys (seed 5). */
export function detailReads(overrides: Partial<ExperimentAttack> = {}): ExperimentAttack {
  return {
    name: "reads",
    model: { kind: "open", rateRps: 300 },
    durationS: 2,
    warmupS: 1,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "uniform" }, seed: 5, keyspace: 300 },
    ...overrides,
  };
}

/** One repeat of `attacks` for local through vegeta on the test seed, with `overrides`. */
export function testExperiment(attacks: ExperimentAttack[], overrides: Partial<Experiment> = {}): Experiment {
  return {
    question: "test",
    expect: "test",
    strategies: ["local"],
    repeats: 1,
    seed: TEST_SEED,
    tools: ["vegeta"],
    attacks,
    ...overrides,
  };
}

export type Row = Record<string, string>;

/** A row's column as a number (NaN when empty or absent: an assertion on it then fails). */
export const num = (row: Row | undefined, column: string): number => Number(row?.[column]);

/** Runs `experiment` quietly into a fresh CSV: its rows as text (none written: []), or the refusal. */
export async function runRows(
  experiment: Experiment,
  options: Pick<RunOptions, "name" | "services"> & Partial<RunOptions>,
): Promise<Row[] | string> {
  const dir = mkdtempSync(join(testTmpdir(), `cachelab-${options.name}-`));
  const out = join(dir, "x.csv");
  try {
    const summary = await runExperiment(experiment, { log: () => {}, status: () => {}, ...options, out });
    if (typeof summary === "string") return summary;
    return summary.rows.length === 0 ? [] : (parse(readFileSync(out, "utf8"), { columns: true }) as Row[]);
  } finally {
    rmSync(dir, { recursive: true, force: true }); // the CSV and its timeline: nothing left in /tmp
  }
}

/** A fresh CSV path in a folder of its own. */
export function tempCsv(): string {
  return join(mkdtempSync(join(testTmpdir(), "cachelab-exp-")), "x.csv");
}

/** A results CSV read back as records of strings. */
export function readRows(path: string): Record<string, string>[] {
  return parse(readFileSync(path, "utf8"), { columns: true }) as Record<string, string>[];
}
