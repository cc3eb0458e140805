/**
 * `bun run report`: comparison tables (Markdown, to stdout) or a self-contained HTML page with charts,
 * from result CSVs and the per-second timeline files beside them (`<experiment>.timeline.csv`), and the
 * replayed curves of trace runs (`<experiment>.curves.csv`) and a capacity search's answer
 * (`<experiment>.capacities.csv`, Markdown only).
 *
 *   bun run report [results/<experiment>.csv ...] [--experiment name] [--baseline none] [--format md|html] [--out report.html]
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type CapacityRow,
  capacitiesPath,
  isCapacitiesPath,
  readCapacities,
} from "../results/capacities_csv.ts";
import { type SkippedRow, skippedWarning } from "../results/csv_read.ts";
import { type CurveRow, curvesPath, isCurvesPath, readCurves } from "../results/curves_csv.ts";
import { reportHtml } from "../results/report_html.ts";
import { reportMarkdown } from "../results/report_markdown.ts";
import { resultsPages, writePage } from "../results/results_pages.ts";
import { loadRows, type ResultRow } from "../results/summary.ts";
import { isTimelinePath, readTimeline, type TimelineRow, timelinePath } from "../results/timeline.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { asksForHelp, exitWith, inputFileProblem, parseFlags, refuseUsage, UsageError } from "./args.ts";

const RESULTS_DIR = join(REPO_ROOT, "results");
const USAGE = `usage: bun run report [results/<experiment>.csv ...] [--experiment name] [--baseline none] [--format md|html] [--out report.html]

  files            result CSVs (default: every results/*.csv); the timeline beside each
                   (<experiment>.timeline.csv), when there is one, adds per-second charts and fault tables;
                   the curves beside it (<experiment>.curves.csv) add a trace run's miss-ratio curves,
                   and the capacities (<experiment>.capacities.csv) a capacity search's answer
  --experiment     only rows of this experiment
  --baseline       strategy the ratios are taken against (default none)
  --format         md (default, to stdout) or html (a self-contained page)
  --out            where the HTML goes (default results/report.html)
  --docs           write docs/results/<experiment>.md from each reference CSV in docs/results/
  -h, --help       this text`;

export async function main(args: string[]): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  try {
    const parsed = parseFlags({
      args,
      options: {
        experiment: { type: "string" },
        baseline: { type: "string" },
        format: { type: "string", default: "md" },
        out: { type: "string" },
        docs: { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: true,
    });
    const values = parsed.values as Record<string, string | boolean | undefined>;
    if (values.docs === true) {
      // The published pages: one per reference CSV in docs/results, generated, never edited by hand.
      for (const page of await resultsPages()) {
        writePage(page);
        console.log(`wrote ${page.path} and ${page.charts.length} chart(s)`);
      }
      return 0;
    }
    const format = String(values.format);
    if (format !== "md" && format !== "html")
      throw new UsageError(`Cannot use --format ${format}: expected md or html`);
    // Checked before the rows are read and the page drawn: a typo in the folder costs nothing.
    const out = format === "html" ? htmlOut(values.out) : null;
    if (format === "md" && typeof values.out === "string")
      throw new UsageError(
        `Cannot use --out with --format md: Markdown goes to stdout: received ${values.out}`,
      );
    const files =
      parsed.positionals.length > 0
        ? parsed.positionals.map((file) => resolve(file))
        : existsSync(RESULTS_DIR)
          ? readdirSync(RESULTS_DIR)
              .filter(
                (file) =>
                  file.endsWith(".csv") &&
                  !isTimelinePath(file) &&
                  !isCurvesPath(file) &&
                  !isCapacitiesPath(file),
              )
              .sort()
              .map((file) => join(RESULTS_DIR, file))
          : [];
    for (const file of files) {
      const problem = inputFileProblem(file);
      if (problem !== null) throw new UsageError(`Cannot read ${file}: ${problem}`);
      if (isTimelinePath(file)) {
        throw new UsageError(
          `Cannot report ${file}: it is a timeline file; pass the results CSV it sits beside (${file.replace(/\.timeline\.csv$/, ".csv")})`,
        );
      }
      if (isCapacitiesPath(file)) {
        throw new UsageError(
          `Cannot report ${file}: it is a capacities file; pass the results CSV it sits beside (${file.replace(/\.capacities\.csv$/, ".csv")})`,
        );
      }
      if (isCurvesPath(file)) {
        throw new UsageError(
          `Cannot report ${file}: it is a curves file; pass the results CSV it sits beside (${file.replace(/\.curves\.csv$/, ".csv")})`,
        );
      }
    }
    if (files.length === 0)
      throw new UsageError("Cannot report: no result CSVs (run `bun run experiment quickstart` first)");
    // A malformed row (a write cut short) is named and left out; the others are reported as usual.
    const onSkip = (skipped: SkippedRow) => console.error(skippedWarning(skipped));
    let rows: ResultRow[];
    let timeline: TimelineRow[];
    let curves: CurveRow[];
    let capacities: CapacityRow[];
    try {
      rows = loadRows(files, onSkip);
      timeline = files
        .map(timelinePath)
        .filter((path) => existsSync(path))
        .flatMap((path) => readTimeline(path, { onSkip }));
      curves = files
        .map(curvesPath)
        .filter((path) => existsSync(path))
        .flatMap((path) => readCurves(path, { onSkip }));
      capacities = files
        .map(capacitiesPath)
        .filter((path) => existsSync(path))
        .flatMap((path) => readCapacities(path, { onSkip }));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const experiments = [...new Set(rows.map((row) => String(row.experiment)))];
    if (typeof values.experiment === "string") {
      if (!experiments.includes(values.experiment)) {
        throw new UsageError(
          `Cannot report experiment ${values.experiment}: the files hold ${experiments.join(", ")}`,
        );
      }
      rows = rows.filter((row) => row.experiment === values.experiment);
      timeline = timeline.filter((second) => second.experiment === values.experiment);
      curves = curves.filter((curve) => curve.experiment === values.experiment);
      capacities = capacities.filter((row) => row.experiment === values.experiment);
    }
    if (rows.length === 0) throw new UsageError("Cannot report: the files hold no rows");
    const baseline = typeof values.baseline === "string" ? values.baseline : "none";
    const strategies = [...new Set(rows.map((row) => String(row.strategy)))];
    if (typeof values.baseline === "string" && !strategies.includes(baseline)) {
      throw new UsageError(
        `Cannot use --baseline ${baseline}: expected a strategy the rows hold, one of ${strategies.join(", ")}`,
      );
    }
    if (out === null) {
      console.log(reportMarkdown(rows, { baseline, timeline, curves, capacities }));
      return 0;
    }
    mkdirSync(dirname(out), { recursive: true }); // results/ by default; --out's folder exists already
    writeFileSync(out, await reportHtml(rows, { baseline, timeline, curves }));
    console.log(`wrote ${out} (${rows.length} rows, ${timeline.length} timeline seconds)`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      return refuseUsage("report", error.message);
    }
    throw error;
  }
}

/** Where the HTML page goes: `--out`, in a folder that exists, or results/report.html. */
function htmlOut(raw: string | boolean | undefined): string {
  if (typeof raw !== "string") return join(RESULTS_DIR, "report.html");
  const out = resolve(raw);
  const dir = dirname(out);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new UsageError(
      `Cannot use --out: the folder ${dir} does not exist (create it first): received ${raw}`,
    );
  if (existsSync(out) && !statSync(out).isFile())
    throw new UsageError(`Cannot use --out: it exists and is not a file: received ${raw}`);
  return out;
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
