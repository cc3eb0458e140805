/**
 * Checks the results a guide page quotes in prose against the committed reference CSVs they come from
 * (docs/results/<csv>.csv), so that a page cannot outlive a re-run: each quote is found in its page, and each
 * figure in it is the CSV's value at the figure's printed rounding. The quotes themselves, and which figures
 * are results, are listed in doc_figures_test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { numbers } from "../lab/results/results_reading.ts";
import { parseRows, type ResultRow, spread } from "../lab/results/summary.ts";
import { REPO_ROOT } from "../lab/shared/repo.ts";

/** Which rows a figure summarises: column → the value, or any of the values, it must hold. */
export type Where = Record<string, string | number | (string | number)[]>;

/** Figures of one quote, all from one column of one reference CSV. */
export interface QuotedFigures {
  /** The page, from the repo root: "docs/server.md". */
  doc: string;
  /** Text as the page has it (line breaks and runs of spaces read as one space). */
  quote: string;
  /** docs/results/<csv>.csv: "miss_cost", "your_workload.curves". */
  csv: string;
  /** The CSV's column the figures read. */
  column: string;
  /** Each figure the quote prints, as printed, and the rows it summarises. */
  figures: Record<string, Where>;
  /**
   * Over the matching rows (the valid ones when the CSV has `valid`): the median (default, as the results
   * pages print), the lowest, the highest, or `each` (every row prints as the figure).
   */
  summary?: "median" | "min" | "max" | "each";
  /** Printed = value × scale: 100 for a percentage. */
  scale?: number;
}

/** A passage copied from a generated results page: every part between `…` is on docs/results/<page>.md. */
export interface QuotedExcerpt {
  doc: string;
  excerpt: string;
  page: string;
}

type Read = (path: string) => string;

const readRepoFile: Read = (path) => readFileSync(join(REPO_ROOT, path), "utf8");

function flat(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function decimals(figure: string): number {
  return figure.includes(".") ? (figure.split(".")[1] as string).length : 0;
}

function cellValue(row: ResultRow, column: string): number | null {
  const raw = row[column];
  if (raw === null || raw === undefined || raw === "") return null;
  const value = Number(raw);
  return Number.isFinite(value) ? value : null;
}

function matches(row: ResultRow, where: Where): boolean {
  return Object.entries(where).every(([column, wanted]) =>
    (Array.isArray(wanted) ? wanted : [wanted]).some((value) => String(row[column]) === String(value)),
  );
}

/** What is wrong with one quote's figures, as readable lines (none when the page says what the CSV holds). */
function figureProblems(quote: QuotedFigures, read: Read): string[] {
  const where = `${quote.doc}: "${quote.quote}"`;
  if (!flat(read(quote.doc)).includes(flat(quote.quote))) return [`${where}: not in the page`];
  const csv = `docs/results/${quote.csv}.csv`;
  const all = parseRows(read(csv), { path: csv });
  const rows = all.some((row) => "valid" in row) ? all.filter((row) => row.valid === true) : all;
  const scale = quote.scale ?? 1;
  const summary = quote.summary ?? "median";
  const problems: string[] = [];
  for (const [figure, filter] of Object.entries(quote.figures)) {
    const [written] = numbers(figure);
    const printed = Number(written);
    if (written === undefined || !numbers(quote.quote).map(Number).includes(printed)) {
      problems.push(`${where}: the figure ${figure} is not in the quote`);
      continue;
    }
    const values = rows
      .filter((row) => matches(row, filter))
      .map((row) => cellValue(row, quote.column))
      .filter((value): value is number => value !== null)
      .map((value) => value * scale);
    const found = spread(values);
    if (found === null) {
      problems.push(`${where}: ${csv} has no valid ${quote.column} where ${JSON.stringify(filter)}`);
      continue;
    }
    const digits = decimals(written);
    // Half a unit of the last printed digit: what rounding to the printed figure can hide, and no more.
    const close = (value: number) => Math.abs(value - printed) <= 0.5 * 10 ** -digits + 1e-9;
    const taken = summary === "each" ? values : [found[summary]];
    const off = taken.find((value) => !close(value));
    if (off !== undefined) {
      problems.push(
        `${where}: ${figure} is not ${csv}'s ${summary} ${quote.column} where ${JSON.stringify(filter)}: ${off.toFixed(digits)}`,
      );
    }
  }
  return problems;
}

/** What is wrong with one excerpt: not in its page, or a part of it not on the results page it copies. */
function excerptProblems(quote: QuotedExcerpt, read: Read): string[] {
  const page = `docs/results/${quote.page}.md`;
  if (!flat(read(quote.doc)).includes(flat(quote.excerpt))) return [`${quote.doc}: excerpt not in the page`];
  const source = flat(read(page));
  return quote.excerpt
    .split(/…|\n/)
    .map((part) => flat(part))
    .filter((part) => part !== "" && !source.includes(part))
    .map((part) => `${quote.doc}: "${part}" is not on ${page}`);
}

/** Every problem with the quotes, as readable lines; `read` takes a path from the repo root. */
export function quoteProblems(
  quotes: (QuotedFigures | QuotedExcerpt)[],
  read: Read = readRepoFile,
): string[] {
  return quotes.flatMap((quote) =>
    "excerpt" in quote ? excerptProblems(quote, read) : figureProblems(quote, read),
  );
}
