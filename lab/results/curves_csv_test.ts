import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { type SkippedRow, skippedWarning } from "./csv_read.ts";
import {
  appendCurves,
  CURVES_COLUMNS,
  type CurveRow,
  curvesPath,
  isCurvesPath,
  readCurves,
} from "./curves_csv.ts";

function curve(overrides: Partial<CurveRow> = {}): CurveRow {
  return {
    run_id: "20260101T000000-abcd1234",
    experiment: "your_workload",
    attack: "replay",
    method: "lru",
    capacity_entries: 10_000,
    capacity_label: "10000",
    configured: true,
    hit_ratio: 0.5414,
    byte_hit_ratio: null,
    reads: 14_321,
    warmup_requests: 5_000,
    from_position: 5_066,
    to_position: 20_066,
    ...overrides,
  };
}

const temp = () => join(mkdtempSync(join(testTmpdir(), "cachelab-curves-")), "x.curves.csv");

describe("the curves file", () => {
  test("its path sits beside the results CSV; a side file is not a results CSV", () => {
    expect(curvesPath("results/your_workload.csv")).toBe("results/your_workload.curves.csv");
    expect(curvesPath("/x/y.v2.csv")).toBe("/x/y.v2.curves.csv");
    expect(isCurvesPath("results/your_workload.curves.csv")).toBe(true);
    expect(() => curvesPath("results/x.curves.csv")).toThrow("not a results CSV path");
    expect(() => curvesPath("results/x.timeline.csv")).toThrow("not a results CSV path");
  });

  test("rows round trip, a null byte hit ratio stays null, appends keep one header", () => {
    const path = temp();
    const rows = [
      curve(),
      curve({ method: "belady", configured: false, capacity_label: "1%", byte_hit_ratio: 0.25 }),
    ];
    appendCurves(path, rows);
    appendCurves(path, [curve({ run_id: "r2", method: "local" })]);
    expect(readCurves(path)).toEqual([...rows, curve({ run_id: "r2", method: "local" })]);
    expect(readFileSync(path, "utf8").split("\n")[0]).toBe(CURVES_COLUMNS.join(","));
    expect(readFileSync(path, "utf8").match(/run_id/g)).toHaveLength(1);
  });

  test("a line cut short never glues onto the next append, and a lenient read skips it with a warning", () => {
    const path = temp();
    appendCurves(path, [curve()]);
    appendFileSync(path, "r,your_workload,replay,lru,10"); // a write cut short: no newline
    appendCurves(path, [curve({ run_id: "after" })]);
    const skipped: SkippedRow[] = [];
    const rows = readCurves(path, { onSkip: (line) => skipped.push(line) });
    expect(rows.map((row) => row.run_id)).toEqual(["20260101T000000-abcd1234", "after"]);
    expect(skipped).toEqual([{ path, line: 3, reason: "5 fields where the header has 13" }]);
    expect(skippedWarning(skipped[0] as SkippedRow)).toBe(
      `warning: skipped ${path} line 3: 5 fields where the header has 13`,
    );
    // Strict, it names the line.
    expect(() => readCurves(path)).toThrow(`Cannot read ${path} line 3`);
  });

  test("a malformed value is skipped with its reason, never read as 0", () => {
    const path = temp();
    appendCurves(path, [curve()]);
    const good = readFileSync(path, "utf8").split("\n")[1] as string;
    appendFileSync(path, `${good.replace("0.5414", "")}\n${good.replace(",lru,", ",fifo,")}\n`);
    appendFileSync(path, `${good.replace(",true,", ",yes,")}\n${good.replace("14321", "14321.5")}\n`);
    const skipped: SkippedRow[] = [];
    expect(readCurves(path, { onSkip: (line) => skipped.push(line) })).toHaveLength(1);
    expect(skipped.map((s) => [s.line, s.reason])).toEqual([
      [3, 'hit_ratio is not a number: received ""'],
      [4, 'method is not one of lru, local, belady, sieve, s3fifo, wtinylfu, arc: received "fifo"'],
      [5, 'configured is not true or false: received "yes"'],
      [6, 'reads is not an integer: received "14321.5"'],
    ]);
  });

  test("another header is refused, on reading and on appending; a non-finite ratio is never written", () => {
    const path = temp();
    writeFileSync(path, "run_id,second\nr,1\n");
    expect(() => readCurves(path)).toThrow("its header is not the curves schema");
    expect(() => appendCurves(path, [curve()])).toThrow("its header is not the curves schema");
    expect(() => appendCurves(temp(), [curve({ hit_ratio: Number.NaN })])).toThrow(
      "Cannot append a curves row: run 20260101T000000-abcd1234 replay lru at 10000",
    );
  });
});
