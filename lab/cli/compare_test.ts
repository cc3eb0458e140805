import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COLUMNS, type CsvRow, formatRow } from "../results/csv.ts";
import { row } from "../results/report_testing.ts";
import { loadRows, type ResultRow } from "../results/summary.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";

const CLI = join(import.meta.dir, "compare.ts");

/** Five repeats of none and local; local's p50 is `scale` × a little noise. */
function rows(runId: string, scale: number): ResultRow[] {
  return [0.5, 0.52, 0.49, 0.51, 0.5].flatMap((p50, i) => [
    row({ run_id: runId, strategy: "none", repeat: i + 1, latency_p50_ms: 2 + i * 0.01 }),
    row({ run_id: runId, strategy: "local", repeat: i + 1, latency_p50_ms: p50 * scale, hit_ratio: 0.9 }),
  ]);
}

function csv(dir: string, name: string, content: ResultRow[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${COLUMNS.join(",")}\n${content.map((r) => formatRow(r as CsvRow)).join("")}`);
  return path;
}

async function compare(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["bun", CLI, ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text()];
  return { code: await proc.exited, stdout, stderr };
}

describe("compare command", () => {
  const dir = mkdtempSync(join(testTmpdir(), "cachelab-compare-cli-"));
  const before = csv(dir, "before.csv", rows("r1", 1));
  const same = csv(dir, "same.csv", rows("r2", 1));
  const slower = csv(dir, "slower.csv", rows("r3", 2));

  test("--fail-on-regression exits 1 naming a significant regression, 0 when there is none", async () => {
    const fired = await compare([before, slower, "--fail-on-regression", "5%"]);
    expect(fired.code).toBe(1);
    expect(fired.stdout).toContain("1 significant regression beyond 5%:");
    expect(fired.stdout).toContain("read_heavy · zipf_reads · vegeta · local: p50 ms +100.0% (p=0.008)");
    const quiet = await compare([before, same, "--fail-on-regression", "5"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain("no significant regression beyond 5%");
    // Without the flag a regression is printed, never an exit code.
    expect((await compare([before, slower])).code).toBe(0);
  });

  test("local 10× slower than the committed read_heavy reference is a regression named local", async () => {
    const reference = join(REPO_ROOT, "docs/results/read_heavy.csv");
    const slowLocal = loadRows([reference]).map((r) =>
      r.strategy !== "local"
        ? { ...r, run_id: "slow" }
        : Object.fromEntries(
            Object.entries(r).map(([name, value]) => [
              name,
              name === "run_id"
                ? "slow"
                : name.startsWith("latency_") && typeof value === "number"
                  ? value * 10
                  : value,
            ]),
          ),
    );
    const result = await compare([
      reference,
      csv(dir, "slow_local.csv", slowLocal),
      "--fail-on-regression",
      "5%",
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/read_heavy · zipf_reads · vegeta · local: p50 ms \+900\.0% \(p[<=]/);
    expect(result.stdout).not.toMatch(/zipf_reads · vegeta · (none|redis|two_tier|tracking): /);
    // The reference's repeats agree within 2×: no cell of it is listed as disagreeing.
    expect(result.stdout).not.toContain("repeats that disagree");
  });

  test("repeats more than 2× apart are named, with their spread", async () => {
    const spreadOut = rows("r5", 1).map((r, i) => (i === 1 ? { ...r, latency_p50_ms: 1.5 } : r));
    const result = await compare([before, csv(dir, "spread.csv", spreadOut)]);
    expect(result.stdout).toContain("repeats that disagree (p50s more than 2× apart)");
    expect(result.stdout).toContain(
      "spread.csv): read_heavy · zipf_reads · vegeta · local: p50 repeats 0.49–1.50 ms (3.06×)",
    );
    expect(result.stdout).not.toContain("before.csv): read_heavy");
  });

  test("a malformed row is warned about and the rest still compared", async () => {
    const cut = csv(dir, "cut.csv", rows("r4", 1));
    appendFileSync(cut, "r4,2026-12-02,read_heavy,zipf\n");
    const result = await compare([before, cut]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/warning: skipped .*cut\.csv line 12/);
    expect(result.stdout).toMatch(/local\s+p50 ms\s+0\.50\s+0\.50\s+~/);
  });

  test("--run-a and --run-b pick two runs from one file; --json prints the comparison", async () => {
    const both = csv(dir, "both.csv", [...rows("r1", 1), ...rows("r3", 2)]);
    const result = await compare([both, "--run-a", "r1", "--run-b", "r3", "--json"]);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json.a.runIds).toEqual(["r1"]);
    expect(json.b.runIds).toEqual(["r3"]);
    const local = json.cells.find((c: { strategy: string }) => c.strategy === "local");
    expect(local.metrics[1]).toMatchObject({ metric: "latency_p50_ms", significant: true });
    expect(json.regressions).toBeNull();
  });

  test("usage errors exit 2 with the reason and where the usage is", async () => {
    const cases: [string[], string][] = [
      [[before], "expected two CSVs, or one with --run-a and --run-b: received 1 files"],
      [[before, join(dir, "missing.csv")], "no such file"],
      [[before, same, "--fail-on-regression", "five"], "expected a percentage such as 5%: received five"],
      [[before, "--run-a", "r1", "--run-b", "nope"], "holds runs r1: received nope"],
      [[before, same, "--bogus"], "Cannot use --bogus: no such option"],
    ];
    for (const [args, message] of cases) {
      const result = await compare(args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toContain(message);
      expect(result.stderr).toEndWith("see `bun run compare --help`\n");
      expect(result.stderr).not.toContain("--fail-on-regression P");
    }
  });
});
