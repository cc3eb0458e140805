import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { appendRow, COLUMNS, type CsvRow, formatRow, resolveCsvPath } from "./csv.ts";

function row(overrides: Partial<CsvRow> = {}): CsvRow {
  const base = Object.fromEntries(COLUMNS.map((column) => [column, null])) as CsvRow;
  return { ...base, run_id: "r1", experiment: "quickstart", valid: true, ...overrides };
}

describe("csv", () => {
  test("formatRow quotes commas, quotes and newlines (RFC 4180) and parses back", () => {
    const text = formatRow(
      row({ invalid_reason: 'wrong body, "version" 3\nexpected 4', offered_rps: 500, valid: false }),
    );
    const [parsed] = parse(text) as string[][];
    expect(parsed).toHaveLength(COLUMNS.length);
    const byName = Object.fromEntries(COLUMNS.map((column, i) => [column, parsed?.[i]]));
    expect(byName.invalid_reason).toBe('wrong body, "version" 3\nexpected 4');
    expect(byName.offered_rps).toBe("500");
    expect(byName.valid).toBe("false");
    expect(byName.hit_ratio).toBe("");
  });

  test("appendRow writes the header once and one line per row", () => {
    const path = join(mkdtempSync(join(testTmpdir(), "cachelab-csv-")), "x.csv");
    appendRow(path, row({ run_id: "a" }));
    appendRow(path, row({ run_id: "b" }));
    const records = parse(readFileSync(path, "utf8"), { columns: true }) as Record<string, string>[];
    expect(records.map((record) => record.run_id)).toEqual(["a", "b"]);
    expect(Object.keys(records[0] ?? {})).toEqual([...COLUMNS]);
  });

  test("appendRow after a row cut short starts the new row on a line of its own", () => {
    const path = join(mkdtempSync(join(testTmpdir(), "cachelab-csv-")), "x.csv");
    appendRow(path, row({ run_id: "a" }));
    const before = readFileSync(path, "utf8");
    appendFileSync(path, "b,,quick"); // a write cut short: no newline
    appendRow(path, row({ run_id: "c" }));
    expect(readFileSync(path, "utf8")).toBe(`${before}b,,quick\n${formatRow(row({ run_id: "c" }))}`);
    appendRow(path, row({ run_id: "d" })); // after a whole row: no empty line
    expect(
      readFileSync(path, "utf8").endsWith(
        `${formatRow(row({ run_id: "c" }))}${formatRow(row({ run_id: "d" }))}`,
      ),
    ).toBe(true);
  });

  test("resolveCsvPath moves to a versioned file when the header differs, and never touches the old file", () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-csv-"));
    const path = join(dir, "read_heavy.csv");
    writeFileSync(path, "run_id,old_column\nr0,1\n");
    const resolved = resolveCsvPath(path);
    expect(resolved.path).toBe(join(dir, "read_heavy.v2.csv"));
    expect(resolved.notice).toContain("another column layout");
    appendRow(resolved.path, row());
    expect(resolveCsvPath(path).path).toBe(join(dir, "read_heavy.v2.csv"));
    expect(readFileSync(path, "utf8")).toBe("run_id,old_column\nr0,1\n");
    expect(() => appendRow(path, row())).toThrow("header is not the current schema");
  });

  test("concurrent writers never interleave partial lines", async () => {
    const path = join(mkdtempSync(join(testTmpdir(), "cachelab-csv-")), "c.csv");
    const script = `import { appendRow, COLUMNS } from "${import.meta.dir}/csv.ts";
const id = process.argv[2];
for (let i = 0; i < 200; i++) {
  const row = Object.fromEntries(COLUMNS.map((c) => [c, "x".repeat(50)]));
  appendRow(${JSON.stringify(path)}, { ...row, run_id: id + "-" + i });
}`;
    const file = join(testTmpdir(), `cachelab-csv-writer-${process.pid}.ts`);
    writeFileSync(file, script);
    const writers = ["a", "b", "c", "d"].map((id) => Bun.spawn(["bun", file, id]));
    expect(await Promise.all(writers.map((writer) => writer.exited))).toEqual([0, 0, 0, 0]);
    // A writer stalled mid-copy can make another one put a newline first: an empty line at worst, never a split row.
    const records = parse(readFileSync(path, "utf8"), { columns: true, skip_empty_lines: true }) as Record<
      string,
      string
    >[];
    expect(records).toHaveLength(800);
    expect(records.every((record) => record.latency_p99_ms === "x".repeat(50))).toBe(true);
  });
});
