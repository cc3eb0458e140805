import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { COLUMNS } from "./csv.ts";
import { reportHtml } from "./report_html.ts";
import { recordedExperiments, runReportPath } from "./report_path.ts";
import type { ResultRow } from "./summary.ts";

function row(experiment: string): ResultRow {
  const base: ResultRow = Object.fromEntries(COLUMNS.map((column) => [column, null]));
  return { ...base, experiment, attack: "a", strategy: "none", tool: "vegeta", repeat: 1, valid: true };
}

describe("run report path", () => {
  test("a run of experiment B never overwrites experiment A's report beside a shared CSV", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-path-"));
    const csv = join(dir, "shared.csv");
    expect(runReportPath(csv, "read_heavy")).toEqual({ path: join(dir, "shared.html"), notice: null });
    const pageA = await reportHtml([row("read_heavy")]);
    writeFileSync(join(dir, "shared.html"), pageA);
    expect(recordedExperiments(join(dir, "shared.html"))).toEqual(["read_heavy"]);
    // The same experiment's newer run replaces its own report, as before.
    expect(runReportPath(csv, "read_heavy").path).toBe(join(dir, "shared.html"));
    const b = runReportPath(csv, "write_mix");
    expect(b.path).toBe(join(dir, "shared.write_mix.html"));
    expect(b.notice).toBe(
      `${join(dir, "shared.html")} is the report of read_heavy: left as it is; this run's report goes to ${b.path}`,
    );
    writeFileSync(b.path, await reportHtml([row("write_mix")]));
    expect(runReportPath(csv, "write_mix").path).toBe(b.path); // B's own name, reused by B's next run
    expect(readFileSync(join(dir, "shared.html"), "utf8")).toBe(pageA);
  });

  test("a file that is not a cachelab run report is left alone, and so is a taken name of its own", () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-path-"));
    const csv = join(dir, "x.csv");
    writeFileSync(join(dir, "x.html"), "<html><body>my notes</body></html>");
    writeFileSync(join(dir, "x.quickstart.html"), "<html><body>mine too</body></html>");
    const chosen = runReportPath(csv, "quickstart");
    expect(chosen.path).toBe(join(dir, "x.quickstart.2.html"));
    expect(chosen.notice).toContain("is not a cachelab run report");
  });
});
