/**
 * `bun run compare A.csv B.csv`: how two runs' machines and settings differ, then the change of rps, p50,
 * p99, hit ratio and DB q/s for every (experiment, attack, tool, strategy) in both, tested across repeats.
 *
 *   bun run compare A.csv [B.csv] [--run-a ID --run-b ID] [--baseline none] [--fail-on-regression 5%] [--json]
 */
import { resolve } from "node:path";
import { compareRuns, regressions } from "../results/comparison.ts";
import { comparisonText, regressionText } from "../results/comparison_text.ts";
import { type SkippedRow, skippedWarning } from "../results/csv_read.ts";
import { loadRows, type ResultRow } from "../results/summary.ts";
import { asksForHelp, exitWith, inputFileProblem, parseFlags, refuseUsage, UsageError } from "./args.ts";

const USAGE = `usage: bun run compare A.csv B.csv [options]
       bun run compare RUNS.csv --run-a RUN_ID --run-b RUN_ID [options]

  A.csv B.csv             results CSVs: A is before (or the reference), B after (or this machine)
  --run-a ID, --run-b ID  pick each side's rows by run_id (one file may hold both runs)
  --baseline NAME         strategy the ratios are taken against (default none)
  --fail-on-regression P  exit 1 when a significant change is worse than P percent (e.g. 5%)
  --json                  print the comparison as JSON
  -h, --help              this text`;

/** "5%" or "5" → 5; anything else is a usage error. */
export function parsePercent(raw: string): number {
  const match = /^(\d+(?:\.\d+)?)%?$/.exec(raw);
  if (!match)
    throw new UsageError(
      `Cannot parse --fail-on-regression: expected a percentage such as 5%: received ${raw}`,
    );
  return Number(match[1]);
}

function pick(rows: ResultRow[], runId: string | undefined, flag: string, file: string): ResultRow[] {
  if (runId === undefined) return rows;
  const picked = rows.filter((row) => row.run_id === runId);
  if (picked.length === 0) {
    const ids = [...new Set(rows.map((row) => String(row.run_id)))].join(", ");
    throw new UsageError(`Cannot pick --${flag} ${runId}: ${file} holds runs ${ids}: received ${runId}`);
  }
  return picked;
}

export function main(args: string[]): number {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  try {
    const parsed = parseFlags({
      args,
      options: {
        "run-a": { type: "string" },
        "run-b": { type: "string" },
        baseline: { type: "string" },
        "fail-on-regression": { type: "string" },
        json: { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: true,
    });
    const values = parsed.values as Record<string, string | boolean | undefined>;
    const files = parsed.positionals.map((file) => resolve(file));
    const runA = typeof values["run-a"] === "string" ? values["run-a"] : undefined;
    const runB = typeof values["run-b"] === "string" ? values["run-b"] : undefined;
    const oneFile = files.length === 1 && runA !== undefined && runB !== undefined;
    if (!(files.length === 2 || oneFile))
      throw new UsageError(
        `Cannot compare: expected two CSVs, or one with --run-a and --run-b: received ${files.length} files`,
      );
    const threshold =
      typeof values["fail-on-regression"] === "string" ? parsePercent(values["fail-on-regression"]) : null;
    for (const file of files) {
      const problem = inputFileProblem(file);
      if (problem !== null) throw new UsageError(`Cannot read ${file}: ${problem}`);
    }
    // A malformed row (a write cut short) is named and left out; the rest are compared.
    const onSkip = (skipped: SkippedRow) => console.error(skippedWarning(skipped));
    const [fileA, fileB] = [files[0] as string, (files[1] ?? files[0]) as string];
    let rowsA: ResultRow[];
    let rowsB: ResultRow[];
    try {
      rowsA = loadRows([fileA], onSkip);
      rowsB = fileB === fileA && oneFile ? rowsA : loadRows([fileB], onSkip);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    rowsA = pick(rowsA, runA, "run-a", fileA);
    rowsB = pick(rowsB, runB, "run-b", fileB);
    for (const [label, rows, file] of [
      ["A", rowsA, fileA],
      ["B", rowsB, fileB],
    ] as const)
      if (rows.length === 0)
        throw new UsageError(`Cannot compare: side ${label} has no rows: received ${file}`);
    const baseline = typeof values.baseline === "string" ? values.baseline : "none";
    const strategies = [...new Set([...rowsA, ...rowsB].map((row) => String(row.strategy)))];
    if (typeof values.baseline === "string" && !strategies.includes(baseline)) {
      throw new UsageError(
        `Cannot use --baseline ${baseline}: expected a strategy the rows hold, one of ${strategies.join(", ")}`,
      );
    }
    const comparison = compareRuns(rowsA, rowsB, { labels: [`A (${fileA})`, `B (${fileB})`], baseline });
    const found = threshold === null ? [] : regressions(comparison, threshold);
    if (values.json) {
      console.log(JSON.stringify({ ...comparison, regressions: threshold === null ? null : found }, null, 2));
    } else {
      console.log(comparisonText(comparison));
      if (threshold !== null) console.log(`\n${regressionText(found, threshold)}`);
    }
    return found.length > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      return refuseUsage("compare", error.message);
    }
    throw error;
  }
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
