import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { appendRow, COLUMNS, type CsvRow, formatRow } from "../results/csv.ts";
import { appendCurves, curvesPath } from "../results/curves_csv.ts";
import {
  outageRows,
  outageTimeline,
  RUN_ID,
  rows,
  traceCurves,
  traceRows,
} from "../results/report_testing.ts";
import { parseRows } from "../results/summary.ts";
import { appendTimeline } from "../results/timeline.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";

describe("report command", () => {
  const cli = join(import.meta.dir, "report.ts");

  test("bad format, unknown experiment and missing file exit 2 with the reason", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-cli-"));
    const csv = join(dir, "r.csv");
    writeFileSync(
      csv,
      `${COLUMNS.join(",")}\n${rows()
        .map((r) => formatRow(r as CsvRow))
        .join("")}`,
    );
    const cases: [string[], string][] = [
      [[csv, "--format", "pdf"], "expected md or html"],
      [[csv, "--experiment", "nope"], "the files hold read_heavy"],
      [[join(dir, "missing.csv")], "no such file"],
    ];
    for (const [args, message] of cases) {
      const proc = Bun.spawn(["bun", cli, ...args], { stderr: "pipe" });
      const stderr = await new Response(proc.stderr).text();
      expect({ args, code: await proc.exited }).toEqual({ args, code: 2 });
      expect(stderr).toContain(message);
    }
    const ok = Bun.spawn(["bun", cli, csv], { stdout: "pipe" });
    expect(await new Response(ok.stdout).text()).toContain(
      "### read_heavy · zipf_reads · vegeta · open, 1000 rps offered",
    );
    expect(await ok.exited).toBe(0);
  });

  test("a row cut short (a full disk) is skipped with its file and line; the rows around it are reported", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-cli-"));
    const csv = join(dir, "redis_outage.csv");
    const [first, second, third, fourth] = outageRows() as CsvRow[];
    for (const whole of [first, second, third]) appendRow(csv, whole as CsvRow);
    const cutLine = readFileSync(csv, "utf8").split("\n").length;
    // Cut inside a quoted field: its open quote must not swallow the row appended after it.
    const partial = formatRow({ ...(fourth as CsvRow), invalid_reason: "cut, short" });
    appendFileSync(csv, partial.slice(0, partial.indexOf('"cut, ') + 4));
    appendRow(csv, fourth as CsvRow);
    expect(readFileSync(csv, "utf8").endsWith(`\n${formatRow(fourth as CsvRow)}`)).toBe(true);
    const timeline = join(dir, "redis_outage.timeline.csv");
    appendTimeline(timeline, outageTimeline());
    const timelineCut = readFileSync(timeline, "utf8").split("\n").length;
    appendFileSync(timeline, `${RUN_ID},redis_outage,redis,veg`);
    const md = Bun.spawn(["bun", cli, csv], { stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = [await new Response(md.stdout).text(), await new Response(md.stderr).text()];
    expect(await md.exited).toBe(0);
    expect(stderr).toContain(`warning: skipped ${csv} line ${cutLine}: a quoted field is never closed`);
    expect(stderr).toContain(
      `warning: skipped ${timeline} line ${timelineCut}: the last line has no newline`,
    );
    expect(stderr.match(/warning: skipped/g)).toHaveLength(2);
    expect(stdout).toContain("| 1 | redis down | 5–9 | 4.80 | 7 | 0.800 | 3 |");
    // All four whole rows are there: three vegeta cells (redis × 2, two_tier) and the wrk one.
    expect(stdout).toContain("### redis_outage · zipf_reads · wrk");
    expect(parseRows(readFileSync(csv, "utf8"), { onSkip: () => {} })).toHaveLength(4);
    expect(() => parseRows(readFileSync(csv, "utf8"), { path: csv })).toThrow(`${csv} line ${cutLine}`);
  });

  test("the timeline beside a CSV is read; a timeline file given as a results CSV exits 2", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-cli-"));
    const csv = join(dir, "redis_outage.csv");
    writeFileSync(
      csv,
      `${COLUMNS.join(",")}\n${outageRows()
        .map((r) => formatRow(r as CsvRow))
        .join("")}`,
    );
    appendTimeline(join(dir, "redis_outage.timeline.csv"), outageTimeline());
    const md = Bun.spawn(["bun", cli, csv], { stdout: "pipe" });
    expect(await new Response(md.stdout).text()).toContain("| 1 | redis down | 5–9 | 4.80 | 7 | 0.800 | 3 |");
    expect(await md.exited).toBe(0);
    const out = join(dir, "r.html");
    const html = Bun.spawn(["bun", cli, csv, "--format", "html", "--out", out], { stdout: "pipe" });
    expect(await new Response(html.stdout).text()).toContain("(4 rows, 120 timeline seconds)");
    expect(await html.exited).toBe(0);
    const wrong = Bun.spawn(["bun", cli, join(dir, "redis_outage.timeline.csv")], { stderr: "pipe" });
    expect(await new Response(wrong.stderr).text()).toContain("it is a timeline file");
    expect(await wrong.exited).toBe(2);
    writeFileSync(join(dir, "redis_outage.timeline.csv"), "run_id,second\nr,0\n");
    const broken = Bun.spawn(["bun", cli, csv], { stderr: "pipe" });
    expect(await new Response(broken.stderr).text()).toContain("its header is not the timeline schema");
    expect(await broken.exited).toBe(2);
  });
  test("the curves beside a CSV are read, a malformed curves line is named; a curves file given as a CSV exits 2", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-cli-"));
    const csv = join(dir, "your_workload.csv");
    for (const whole of traceRows()) appendRow(csv, whole as CsvRow);
    const curves = curvesPath(csv);
    appendCurves(curves, traceCurves());
    const cut = readFileSync(curves, "utf8").split("\n").length;
    appendFileSync(curves, "20260102T000000-trace001,your_workload,replay,lru,1");
    const md = Bun.spawn(["bun", cli, csv], { stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr] = [await new Response(md.stdout).text(), await new Response(md.stderr).text()];
    expect(await md.exited).toBe(0);
    expect(stdout).toContain("| 150 ◀ configured | 150 | 0.390 / 0.380 | 0.411 / 0.401 | 0.480 / n/a |");
    expect(stderr).toContain(`warning: skipped ${curves} line ${cut}: the last line has no newline`);
    const html = Bun.spawn(["bun", cli, csv, "--format", "html", "--out", join(dir, "r.html")], {
      stdout: "pipe",
    });
    expect(await html.exited).toBe(0);
    expect(readFileSync(join(dir, "r.html"), "utf8")).toContain('<figure class="chart curves">');
    const wrong = Bun.spawn(["bun", cli, curves], { stderr: "pipe" });
    expect(await new Response(wrong.stderr).text()).toContain(
      `it is a curves file; pass the results CSV it sits beside (${csv})`,
    );
    expect(await wrong.exited).toBe(2);
  });
});
