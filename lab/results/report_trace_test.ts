import { describe, expect, test } from "bun:test";
import { reportHtml } from "./report_html.ts";
import { reportMarkdown } from "./report_markdown.ts";
import { row, rows, TRACE_RUN_ID, traceCurves, traceRows } from "./report_testing.ts";
import { groupCurves, measuredPoints } from "./report_trace.ts";
import { summarize } from "./summary.ts";

const TRACE_TITLE = "Trace: file=experiments/traces/sample.csv.gz, format=csv · in order";
const STATS = "| 40,000 | 11,231 | 0.037 | 0.578 | 0.281 | 0.774 | 13,168,554 B | 640 B / 6,753 B | 50 | 0 |";

describe("the report's trace block", () => {
  test("Markdown: a trace group's statistics and curves sit above its strategy table", () => {
    const md = reportMarkdown([...traceRows(), ...rows()], { curves: traceCurves() });
    const [trace, other] = md.split("### read_heavy") as [string, string];
    expect(trace).toContain(`**${TRACE_TITLE}**`);
    expect(trace).toContain(STATS);
    expect(trace).toContain(
      `Miss-ratio curves of the segment replayed (run ${TRACE_RUN_ID}): warm-up positions 0–4999, then 14,321 measured reads of positions 5066–20065`,
    );
    expect(trace).toContain("| 150 ◀ configured | 150 | 0.390 / 0.380 | 0.411 / 0.401 | 0.480 / n/a |");
    expect(trace).toContain("| 100% | 1,500 | 0.550 / 0.540 | 0.550 / 0.540 | 0.550 / n/a |");
    expect(trace).toContain(
      "local 0.412 at 150 entries (at l1_max_entries); two_tier 0.470 at 150 entries (L1+L2, at its L1's l1_max_entries); redis 0.520 at 1,500 entries (unbounded, TTL only: drawn at the working set)",
    );
    // Above the strategy table, which still follows.
    expect(trace.indexOf(STATS)).toBeLessThan(trace.indexOf("| strategy | valid |"));
    expect(trace).not.toContain("none 0.000");
    // A group that replayed no trace gets nothing of it.
    expect(other).not.toContain("Trace:");
    expect(other).not.toContain("Miss-ratio curves");
    expect(other).not.toContain("◀ configured");
  });

  test("a trace group whose runs wrote no curves says so; a non-trace report is unchanged by curves", () => {
    expect(reportMarkdown(traceRows())).toContain("_no replayed curves for these runs");
    expect(
      reportMarkdown(traceRows(), { curves: traceCurves().map((c) => ({ ...c, run_id: "other" })) }),
    ).toContain("_no replayed curves for these runs");
    expect(reportMarkdown(rows(), { curves: traceCurves() })).toBe(reportMarkdown(rows()));
  });

  test("HTML: the statistics, the curves chart with the configured rule and the measured points", async () => {
    const html = await reportHtml([...traceRows(), ...rows()], { curves: traceCurves() });
    const [trace, other] = html.split("<h3>read_heavy") as [string, string];
    expect(trace).toContain(`<h4>${TRACE_TITLE}</h4>`);
    expect(trace).toContain("<td>13,168,554 B</td>");
    expect(trace).toContain('<figure class="chart curves"><svg');
    for (const text of [
      "Hit ratio of the replayed segment against capacity",
      "configured 150",
      "capacity (entries, log)",
    ]) {
      expect(trace).toContain(text);
    }
    // One line per method and a point per strategy with a cache (none has none).
    expect(trace.match(/role-mark curves_marks/g)).toHaveLength(3);
    expect(trace).toContain("role-mark measured_marks");
    expect(trace).toContain(`<td class="s">150 ◀ configured</td>`);
    expect(other).not.toContain("chart curves");
    expect(other).not.toContain("Trace:");
    const plain = await reportHtml(rows(), { curves: traceCurves() });
    expect(plain).not.toContain("chart curves");
  });

  test("measured points: local and two_tier at l1_max_entries, redis at the working set, none left out", () => {
    const [group] = summarize(traceRows());
    if (group === undefined) throw new Error("no group");
    const curves = groupCurves(group, traceCurves());
    expect(curves?.configuredEntries).toBe(150);
    expect(curves?.workingSetEntries).toBe(1_500);
    expect(measuredPoints(group, curves).map((p) => [p.strategy, p.entries, p.hitRatio])).toEqual([
      ["local", 150, 0.412],
      ["two_tier", 150, 0.47],
      ["redis", 1_500, 0.52],
    ]);
    // An invalid local row has no median, so no point; the latest run with curves is the one drawn.
    const invalid = traceRows().map((r) => (r.strategy === "local" ? { ...r, valid: false } : r));
    const [only] = summarize([
      ...invalid,
      row({ ...traceRows()[1], run_id: "20250101T000000-older000", valid: false }),
    ]);
    if (only === undefined) throw new Error("no group");
    const older = traceCurves().map((c) => ({ ...c, run_id: "20250101T000000-older000" }));
    const both = groupCurves(only, [...older, ...traceCurves()]);
    expect([both?.runId, both?.runs]).toEqual([TRACE_RUN_ID, 2]);
    expect(measuredPoints(only, both).map((p) => p.strategy)).toEqual(["two_tier", "redis"]);
  });
});

describe("the eviction policies in the trace block and on the card", () => {
  test("Markdown: a column and a card line per run whose curves have them", () => {
    const md = reportMarkdown(traceRows(), { curves: traceCurves({ policies: true }) });
    expect(md).toContain("| capacity | entries | lru | local | belady | sieve | s3fifo | wtinylfu | arc |");
    expect(md).toContain(
      "| 150 ◀ configured | 150 | 0.390 / 0.380 | 0.411 / 0.401 | 0.480 / n/a | 0.400 / 0.390 | 0.450 / 0.440 | 0.430 / 0.420 | 0.420 / 0.410 |",
    );
    // S3-FIFO's 0.45 against quick-lru's 0.411 at the configured 150: misses 0.589 → 0.550, −7%.
    const line =
      "- eviction policy on this trace: S3-FIFO at 150 entries: −7% misses against quick-lru (miss ratio 0.589 → 0.550; best of SIEVE, S3-FIFO, W-TinyLFU, ARC on the replayed curves)";
    expect(md).toContain(line);
    // On the card, among what each buys, before the break-evens.
    expect(md.indexOf(line)).toBeLessThan(md.indexOf("Break-evens"));
    expect(md.indexOf(line)).toBeGreaterThan(md.indexOf("What each buys and costs here"));
  });

  test("an older curves file (lru, local, belady) keeps its three columns, and the card says why it has no line", () => {
    const md = reportMarkdown(traceRows(), { curves: traceCurves() });
    expect(md).toContain("| capacity | entries | lru | local | belady |\n");
    expect(md).toContain(
      "- eviction policy on this trace: not computed: this run's curves have no policy curve at 150 entries (written before the policies were added)",
    );
    // No curves at all: the trace block says so, and the card has no policy line.
    expect(reportMarkdown(traceRows())).not.toContain("eviction policy on this trace");
    // A group that replayed no trace has none either.
    expect(reportMarkdown(rows(), { curves: traceCurves({ policies: true }) })).not.toContain(
      "eviction policy",
    );
  });

  test("HTML: seven curves (the policies dashed) and the card line", async () => {
    const html = await reportHtml(traceRows(), { curves: traceCurves({ policies: true }) });
    expect(html.match(/role-mark curves_marks/g)).toHaveLength(7);
    expect(html).toContain('stroke-dasharray="4,2"');
    expect(html).toContain(
      "<li>eviction policy on this trace: S3-FIFO at 150 entries: −7% misses against quick-lru",
    );
  });
});
