import { beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import {
  pageIsCurrent,
  RESULTS_PAGES_DIR,
  type ResultsPage,
  referenceCsvs,
  resultsPage,
  resultsPages,
  writePage,
} from "./results_pages.ts";
import { unbackedFigures } from "./results_reading.ts";

describe("the published results pages", () => {
  // Built once for both checks: every page renders its charts through vega, seconds for them all.
  let pages: ResultsPage[];
  beforeAll(async () => {
    pages = await resultsPages();
  }, 120_000);

  test("every committed page in docs/results is what its committed CSV gives", () => {
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.filter((page) => !pageIsCurrent(page)).map((page) => page.path)).toEqual([]);
  });

  test("a reading quotes only figures its generated page shows", () => {
    const unbacked = pages
      .filter((page) => page.reading !== null)
      .map((page) => ({
        page: basename(page.path),
        figures: unbackedFigures(page.reading as string, page.report),
      }))
      .filter((found) => found.figures.length > 0);
    expect(unbacked).toEqual([]);
  });

  test("a page whose CSV changed is not current, and a cut row in a reference CSV is refused", async () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-results-pages-"));
    const [first] = referenceCsvs(RESULTS_PAGES_DIR);
    const csv = join(dir, "your_workload.csv");
    copyFileSync(
      first?.endsWith("your_workload.csv") ? first : join(RESULTS_PAGES_DIR, "your_workload.csv"),
      csv,
    );
    const page = await resultsPage(csv);
    writePage(page);
    expect(pageIsCurrent(page)).toBe(true);
    // Its charts are files beside it; one edited by hand, or one left over, makes the page not current.
    expect(page.charts.length).toBeGreaterThan(0);
    expect(page.markdown).toContain(
      `](${basename(page.charts[0]?.path ?? "")})`.replace("](", "](your_workload/"),
    );
    const [chart] = page.charts;
    writeFileSync(chart?.path as string, `${chart?.svg}<!-- edited -->`);
    expect(pageIsCurrent(page)).toBe(false);
    writePage(page);
    writeFileSync(join(dir, "your_workload", "left-over.svg"), "<svg/>");
    expect(pageIsCurrent(page)).toBe(false);
    writePage(page);
    expect(pageIsCurrent(page)).toBe(true);
    // One p50 changed in the CSV: the committed page no longer matches.
    const text = readFileSync(csv, "utf8");
    const lines = text.split("\n");
    lines[1] = (lines[1] as string).replace(/,0\.\d+,/, ",9.999,");
    writeFileSync(csv, lines.join("\n"));
    expect(pageIsCurrent(await resultsPage(csv))).toBe(false);
    writeFileSync(csv, `${text}${(text.split("\n")[1] as string).slice(0, 40)}`);
    expect(resultsPage(csv)).rejects.toThrow(/a reference CSV must have no malformed row/);
  });
});
