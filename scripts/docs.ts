/**
 * The docs' generated parts: the README's experiment list, from each experiment file's `question`;
 * docs/csv.md's column table, from lab/results/csv_columns.ts; docs/results.md's list of
 * reference runs, from docs/results/*.csv; and the guide pages' tables of results, from those CSVs
 * (scripts/docs_results.ts). `bun scripts/docs.ts` writes them; `--check` exits 1 when a page differs (a
 * test checks each part).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { experimentNames, loadExperiment } from "../lab/cli/experiment.ts";
import { COLUMNS } from "../lab/results/csv.ts";
import { COLUMN_MEANINGS } from "../lab/results/csv_columns.ts";
import { RESULTS_PAGES_DIR } from "../lab/results/results_pages.ts";
import { loadRows } from "../lab/results/summary.ts";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { breakEvenChecksTable, missCostTable, payloadSizeTable, strategyTable } from "./docs_results.ts";

/** A generated part: the page (from the repo root), its block's name, and what the block holds. */
export interface GeneratedPart {
  page: string;
  block: string;
  content: () => string | Promise<string>;
}

/** Every generated part of the docs, in the order `bun scripts/docs.ts` writes them. */
export const GENERATED_PARTS: GeneratedPart[] = [
  { page: "README.md", block: "experiments", content: () => experimentList() },
  {
    page: "README.md",
    block: "quickstart-result",
    content: () =>
      strategyTable("quickstart", [
        "strategy",
        "p50 ms",
        "p99 ms",
        "hit ratio",
        "simulated",
        "db queries/s",
        "p99 ÷ none",
        "db ÷ none",
      ]),
  },
  { page: "docs/csv.md", block: "columns", content: () => columnTable() },
  { page: "docs/results.md", block: "results", content: () => resultsTable() },
  {
    page: "docs/your_workload.md",
    block: "your-workload-result",
    content: () =>
      strategyTable("your_workload", [
        "strategy",
        "p50 ms",
        "p99 ms",
        "hit ratio",
        "simulated",
        "optimal",
        "db queries/s",
        "db ÷ none",
      ]),
  },
  { page: "docs/miss_cost.md", block: "miss-cost-result", content: () => missCostTable() },
  { page: "docs/miss_cost.md", block: "payload-size-result", content: () => payloadSizeTable() },
  {
    page: "docs/card.md",
    block: "break-even-checks",
    content: () => breakEvenChecksTable(["miss_cost", "network_rtt"]),
  },
];

/** `text` (the page `page`) with each of its generated parts filled in. */
export async function withParts(page: string, text: string): Promise<string> {
  let next = text;
  for (const part of GENERATED_PARTS.filter((p) => p.page === page))
    next = withBlock(next, part.block, await part.content());
  return next;
}

/** One row per experiment: its page, what it asks, and what its reference run holds (or that it has none). */
export async function resultsTable(): Promise<string> {
  const rows = ["| experiment | question | reference run |", "| --- | --- | --- |"];
  for (const name of experimentNames()) {
    const { question } = await loadExperiment(name);
    const csv = join(RESULTS_PAGES_DIR, `${name}.csv`);
    if (!existsSync(csv)) {
      rows.push(`| ${name} | ${question} | none yet |`);
      continue;
    }
    const results = loadRows([csv]);
    const valid = results.filter((row) => row.valid === true).length;
    const started = String(results[0]?.started_at_utc ?? "").slice(0, 10);
    rows.push(
      `| [${name}](results/${name}.md) | ${question} | ${results.length} rows, ${valid} valid, ${started} |`,
    );
  }
  return rows.join("\n");
}

/** One row per experiment: its name (linked to its reference page when it has one) and its question. */
export async function experimentList(): Promise<string> {
  const rows = ["| experiment | the question it answers |", "| --- | --- |"];
  for (const name of experimentNames()) {
    const { question } = await loadExperiment(name);
    const page = existsSync(join(RESULTS_PAGES_DIR, `${name}.md`));
    rows.push(`| ${page ? `[\`${name}\`](docs/results/${name}.md)` : `\`${name}\``} | ${question} |`);
  }
  return rows.join("\n");
}

/** `text` with its generated `block` (between `<!-- block:start -->` and `:end`) replaced by `content`. */
export function withBlock(text: string, block: string, content: string): string {
  const [START, END] = [`<!-- ${block}:start -->`, `<!-- ${block}:end -->`];
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start === -1 || end < start)
    throw new Error(`Cannot fill ${block}: the page has no ${START} … ${END} block`);
  return `${text.slice(0, start + START.length)}\n${content}\n${text.slice(end)}`;
}

/** The column table: one row per group of columns that share a meaning, in lab/results/csv_columns.ts's order. */
export function columnTable(): string {
  const rows = COLUMN_MEANINGS.map(
    ({ columns, meaning }) => `| ${columns.map((column) => `\`${column}\``).join(", ")} | ${meaning} |`,
  );
  return ["| column | meaning |", "| --- | --- |", ...rows].join("\n");
}

/** A page as Biome may pad it: table cells trimmed and separator rows shortened, for comparing content. */
export function normalized(text: string): string {
  return text
    .split("\n")
    .map((line) => (line.startsWith("|") ? line.replace(/\s*\|\s*/g, "|").replace(/-{3,}/g, "---") : line))
    .join("\n");
}

/** What is wrong with `meanings` against the CSV's `columns`: a column without a meaning, or with two. */
export function columnMeaningProblems(
  columns: readonly string[],
  meanings: readonly { columns: readonly string[]; meaning: string }[],
): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (const { columns: named, meaning } of meanings) {
    if (meaning.trim() === "") problems.push(`${named.join(", ")}: an empty meaning`);
    for (const column of named) seen.set(column, (seen.get(column) ?? 0) + 1);
  }
  for (const column of columns) {
    const count = seen.get(column) ?? 0;
    if (count === 0) problems.push(`${column}: no meaning`);
    if (count > 1) problems.push(`${column}: ${count} meanings`);
  }
  for (const column of seen.keys()) if (!columns.includes(column)) problems.push(`${column}: not a column`);
  return problems;
}

if (import.meta.main) {
  const problems = columnMeaningProblems(COLUMNS, COLUMN_MEANINGS);
  if (problems.length > 0) {
    console.error(`lab/results/csv_columns.ts: ${problems.join("; ")}`);
    process.exit(1);
  }
  const pages = [...new Set(GENERATED_PARTS.map((part) => part.page))];
  for (const page of pages) {
    const path = join(REPO_ROOT, page);
    const text = readFileSync(path, "utf8");
    const generated = await withParts(page, text);
    if (process.argv.includes("--check")) {
      if (normalized(generated) !== normalized(text)) {
        console.error(`${path} is out of date: run bun scripts/docs.ts`);
        process.exit(1);
      }
    } else writeFileSync(path, generated);
  }
  if (!process.argv.includes("--check")) console.log(`${pages.join(", ")}: generated parts written`);
}
