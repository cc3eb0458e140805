/**
 * The results the guide quotes are the committed ones. A figure in README.md or docs/*.md is a **result** when
 * an experiment measured it: a row of a reference CSV in docs/results/, or a median, ratio or range of such
 * rows (a p50, a hit ratio, a count of database queries, a staleness, a Redis entry's bytes, a curve's hit
 * ratio). A result is either
 *   - in a table generated from its CSV (a `<!-- name:start -->` block that scripts/docs.ts writes from
 *     scripts/docs_results.ts, checked current by docs_test.ts): the way for a table of results; or
 *   - quoted in prose and listed below, with the CSV, the column and the rows it summarises: this test fails
 *     when the page's text or the CSV's value moves (a quote must be in its page, and each figure in it must
 *     be the CSV's value to within half a unit of its last printed digit); or
 *   - copied from a generated results page (docs/results/<experiment>.md, itself tested against its CSV) and
 *     listed below as an excerpt.
 * Not results, and not listed: an experiment's plan and defaults (rates, durations, sizes, repeats, TTLs),
 * flags and settings, versions, the dataset's and a trace's own properties, figures the lab measured of
 * itself or of a tool (bench/ scripts, docs/benchmarks.md, a test's run, an EXPLAIN or a client's timeout,
 * each said beside it), worked examples and illustrative output, and CHANGELOG.md's figures that moved (history:
 * what an earlier run read, kept to recognise an old reading). docs/results/'s readings are tested by
 * lab/results/results_pages_test.ts. A new result in a guide page: generate its table, or add its quote here.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { type QuotedExcerpt, type QuotedFigures, quoteProblems } from "./doc_figures.ts";

const CACHES = ["local", "redis", "two_tier", "tracking"];

const QUOTES: (QuotedFigures | QuotedExcerpt)[] = [
  {
    doc: "README.md",
    page: "quickstart",
    excerpt: `**Pick: local (~ two_tier, tracking, none: not distinguishable on p99) — p99 intervals at 75% confidence**
- two_tier if you run more than one instance and need staleness under its TTL, 60000 ms (…); otherwise local
Ranked on p99 (then p50): local ~ two_tier ~ tracking ~ none ~ redis
- local: p50 −48%, p99 ~ (−34%, within the repeats' noise), DB −71%, CPU/1k req −42%, Postgres + Redis CPU/1k req −55%
- extra cost of a Redis hit beyond which redis stops saving latency over none: E* = … = 0.20 ms; here E = … = 0.18 ms: below, …`,
  },
  {
    doc: "docs/your_workload.md",
    quote: "a replayed working set of 6 573 keys",
    csv: "your_workload.curves",
    column: "capacity_entries",
    figures: { "6 573": { method: "lru", capacity_label: "100%" } },
  },
  {
    doc: "docs/your_workload.md",
    quote: "(0.631 against 0.668)",
    csv: "your_workload",
    column: "hit_ratio",
    figures: { "0.631": { strategy: "local" }, "0.668": { strategy: "redis" } },
  },
  {
    doc: "docs/trace_statistics.md",
    quote: "the segment holds 6 573 keys",
    csv: "your_workload.curves",
    column: "capacity_entries",
    figures: { "6 573": { method: "lru", capacity_label: "100%" } },
  },
  {
    doc: "docs/trace_statistics.md",
    quote: "local measured 0.631, on its own curve",
    csv: "your_workload",
    column: "hit_ratio",
    figures: { "0.631": { strategy: "local" } },
  },
  {
    doc: "docs/trace_statistics.md",
    quote: "(0.631 there), where LRU would have had 0.603 and MIN 0.669, what the",
    csv: "your_workload.curves",
    column: "hit_ratio",
    figures: {
      "0.631": { method: "local", configured: "true" },
      "0.603": { method: "lru", configured: "true" },
      "0.669": { method: "belady", configured: "true" },
    },
  },
  {
    doc: "docs/trace_statistics.md",
    quote: "where redis measured 0.668",
    csv: "your_workload",
    column: "hit_ratio",
    figures: { "0.668": { strategy: "redis" } },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "(Postgres's mean execution 0.03 → 0.46 ms)",
    csv: "miss_cost",
    column: "pg_exec_ms_mean",
    figures: {
      "0.03": { attack: "detail", strategy: "none" },
      "0.46": { attack: "summary_r1000", strategy: "none" },
    },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "none's p50 follows it, from 0.54 ms for the detail to 1.06",
    csv: "miss_cost",
    column: "latency_p50_ms",
    figures: {
      "0.54": { attack: "detail", strategy: "none" },
      "1.06": { attack: "summary_r1000", strategy: "none" },
    },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "the server sees a load take 0.27 to 0.80 ms",
    csv: "miss_cost",
    column: "db_load_ms_p50",
    figures: {
      "0.27": { attack: "detail", strategy: "none" },
      "0.80": { attack: "summary_r1000", strategy: "none" },
    },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "Every cache answers 0.64 to 0.65 of the reads without Postgres",
    csv: "miss_cost",
    column: "hit_ratio",
    figures: { "0.64": { strategy: CACHES } },
    summary: "min",
  },
  {
    doc: "docs/miss_cost.md",
    quote: "Every cache answers 0.64 to 0.65 of the reads without Postgres",
    csv: "miss_cost",
    column: "hit_ratio",
    figures: { "0.65": { strategy: CACHES } },
    summary: "max",
  },
  {
    doc: "docs/miss_cost.md",
    quote: "(0.55 against 1.06 ms at 1 000 reviews)",
    csv: "miss_cost",
    column: "latency_p50_ms",
    figures: {
      "0.55": { attack: "summary_r1000", strategy: "redis" },
      "1.06": { attack: "summary_r1000", strategy: "none" },
    },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "from 0.65 ms at 200 B (0.52 at 2 KB",
    csv: "payload_size",
    column: "latency_p50_ms",
    figures: { "0.65": { attack: "b200", strategy: "none" }, "0.52": { attack: "kb2", strategy: "none" } },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "to 1.76 at 100 KB",
    csv: "payload_size",
    column: "latency_p50_ms",
    figures: { "1.76": { attack: "kb100", strategy: "none" } },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "1.03 ms of mean execution at 100 KB",
    csv: "payload_size",
    column: "pg_exec_ms_mean",
    figures: { "1.03": { attack: "kb100", strategy: "none" } },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "redis's less, to 0.68 ms",
    csv: "payload_size",
    column: "latency_p50_ms",
    figures: { "0.68": { attack: "kb100", strategy: "redis" } },
  },
  {
    doc: "docs/miss_cost.md",
    quote:
      "peak RSS 204 MB (local), 236 MB (two_tier) and 182 MB (tracking) at 100 KB against 156 MB for none",
    csv: "payload_size",
    column: "server_rss_peak_mb",
    figures: {
      "204": { attack: "kb100", strategy: "local" },
      "236": { attack: "kb100", strategy: "two_tier" },
      "182": { attack: "kb100", strategy: "tracking" },
      "156": { attack: "kb100", strategy: "none" },
    },
  },
  {
    doc: "docs/miss_cost.md",
    quote: "Redis holds 72919 B an entry there",
    csv: "payload_size",
    column: "redis_bytes_per_entry",
    figures: { "72919": { attack: "kb100", strategy: "redis" } },
  },
  {
    doc: "docs/server.md",
    quote: "went from a p50 of 0.65 ms at 5000 rps to 12.37 ms at 20000",
    csv: "pool_exhaustion",
    column: "latency_p50_ms",
    figures: {
      "0.65": { attack: "unbounded_5000", strategy: "none" },
      "12.37": { attack: "unbounded_20000", strategy: "none" },
    },
  },
  {
    doc: "docs/strategy_reference.md",
    quote: "scale_out measured stale reads for at most 3.45 ms on 2 instances, 8.54 ms on 4",
    csv: "scale_out",
    column: "staleness_max_ms",
    figures: {
      "3.45": { attack: "instances_2", strategy: "two_tier" },
      "8.54": { attack: "instances_4", strategy: "two_tier" },
    },
  },
  {
    doc: "docs/strategy_reference.md",
    quote: "scale_out measured stale reads for at most 0.19 ms on 2 instances, 3.56 ms on 4",
    csv: "scale_out",
    column: "staleness_max_ms",
    figures: {
      "0.19": { attack: "instances_2", strategy: "tracking" },
      "3.56": { attack: "instances_4", strategy: "tracking" },
    },
  },
];

const readRepoFile = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");

/** The repo's files as they are, but `path`'s text passed through `change`. */
function changed(path: string, change: (text: string) => string) {
  return (file: string) => (file === path ? change(readRepoFile(file)) : readRepoFile(file));
}

describe("the results the guide quotes", () => {
  test("every quoted figure is its committed CSV's, at its printed rounding", () => {
    expect(quoteProblems(QUOTES)).toEqual([]);
  });

  test("a figure that drifts from its CSV, in the page or in the CSV, is found", () => {
    const [quote] = QUOTES.filter((q): q is QuotedFigures => "quote" in q && q.doc === "docs/server.md") as [
      QuotedFigures,
    ];
    // The page and its quote say 0.66 where the CSV's median prints 0.65.
    const edited = {
      ...quote,
      quote: quote.quote.replace("0.65", "0.66"),
      figures: { "0.66": quote.figures["0.65"] ?? {} },
    };
    const page = changed("docs/server.md", (text) => text.replace("0.65 ms at 5000", "0.66 ms at 5000"));
    expect(quoteProblems([edited], page)).toEqual([
      `docs/server.md: "${edited.quote}": 0.66 is not docs/results/pool_exhaustion.csv's median latency_p50_ms where {"attack":"unbounded_5000","strategy":"none"}: 0.65`,
    ]);
    // A re-run: the CSV moves under an unchanged page.
    const rerun = changed("docs/results/pool_exhaustion.csv", (text) => text.replace(",0.649697,", ",0.9,"));
    expect(quoteProblems([quote], rerun)).toHaveLength(1);
    // The page no longer holds the quote, or the quote not the figure.
    const gone = changed("docs/server.md", (text) => text.replace("12.37 ms", "12 ms"));
    expect(quoteProblems([quote], gone)).toEqual([`docs/server.md: "${quote.quote}": not in the page`]);
    expect(quoteProblems([{ ...quote, figures: { "9.99": {} } }])).toEqual([
      `docs/server.md: "${quote.quote}": the figure 9.99 is not in the quote`,
    ]);
  });

  test("an excerpt of a results page that the page no longer holds is found", () => {
    const excerpt = QUOTES.find((q): q is QuotedExcerpt => "excerpt" in q) as QuotedExcerpt;
    const rerun = changed("docs/results/quickstart.md", (text) => text.replace("p50 −48%", "p50 −57%"));
    expect(quoteProblems([excerpt], rerun)).toEqual([
      `README.md: "- local: p50 −48%, p99 ~ (−34%, within the repeats' noise), DB −71%, CPU/1k req −42%, Postgres + Redis CPU/1k req −55%" is not on docs/results/quickstart.md`,
    ]);
  });
});
