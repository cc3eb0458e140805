import { describe, expect, test } from "bun:test";
import { compareRuns, consequenceLines, METRICS, regressions } from "./comparison.ts";
import { comparisonText } from "./comparison_text.ts";
import { row } from "./report_testing.ts";
import type { ResultRow } from "./summary.ts";

/** `n` repeats of none and local; `p50` gives each repeat's local p50 (none's is 2 ms ± noise). */
function run(
  runId: string,
  p50: (repeat: number) => number,
  n = 5,
  extra: Partial<ResultRow> = {},
): ResultRow[] {
  return Array.from({ length: n }, (_, i) => [
    row({ run_id: runId, strategy: "none", repeat: i + 1, latency_p50_ms: 2 + (i % 3) * 0.1, ...extra }),
    row({
      run_id: runId,
      strategy: "local",
      repeat: i + 1,
      latency_p50_ms: p50(i),
      hit_ratio: 0.9,
      db_queries: 1_000,
      ...extra,
    }),
  ]).flat();
}

const NOISE = [0.5, 0.52, 0.49, 0.51, 0.5];

function change(rows: ReturnType<typeof compareRuns>, strategy: string, metric: string) {
  return rows.cells.find((c) => c.strategy === strategy)?.metrics.find((m) => m.metric === metric);
}

describe("compareRuns", () => {
  test("noise between two runs is not significant and prints ~", () => {
    const a = run("a", (i) => NOISE[i] as number);
    const b = run("b", (i) => NOISE[(i + 2) % 5] as number);
    const comparison = compareRuns(a, b);
    const p50 = change(comparison, "local", "latency_p50_ms");
    expect(p50).toMatchObject({ significant: false, test: { method: "U", nA: 5, nB: 5 } });
    expect(p50?.test.p as number).toBeGreaterThan(0.05);
    expect(comparisonText(comparison)).toMatch(/local\s+p50 ms\s+0\.50\s+0\.50\s+~\s+p=1\.000 U \(n=5\+5\)/);
  });

  test("p50 doubled in every repeat (5 a side) is flagged with p < 0.05, and the ratio to none doubles", () => {
    const a = run("a", (i) => NOISE[i] as number);
    const b = run("b", (i) => 2 * (NOISE[i] as number));
    const comparison = compareRuns(a, b);
    const p50 = change(comparison, "local", "latency_p50_ms");
    expect(p50?.significant).toBe(true);
    expect(p50?.test.p).toBeCloseTo(2 / 252, 12);
    expect(p50?.deltaPct).toBeCloseTo(100, 6);
    expect(comparisonText(comparison)).toMatch(/local\s+p50 ms\s+0\.50\s+1\.00\s+\+100\.0%\s+p=0\.008 U/);
    const ratio = comparison.ratios.find((r) => r.strategy === "local" && r.metric === "latency_p50_ms");
    expect(ratio?.changePct).toBeCloseTo(100, 6);
    expect(regressions(comparison, 5).map((r) => `${r.cell} ${r.label}`)).toEqual([
      "read_heavy · zipf_reads · vegeta · local p50 ms",
    ]);
    // Better, not worse: the reverse direction is no regression.
    expect(regressions(compareRuns(b, a), 5)).toEqual([]);
    // Beyond the threshold only: a 100% change is no regression at 150%.
    expect(regressions(comparison, 150)).toEqual([]);
  });

  test("3 vs 3 uses Welch; one repeat gives no p-value at all", () => {
    const welch = change(
      compareRuns(
        run("a", () => 0.5, 3),
        run("b", (i) => 1 + i * 0.01, 3),
      ),
      "local",
      "latency_p50_ms",
    );
    expect(welch?.test.method).toBe("welch");
    expect(welch?.significant).toBe(true);
    const single = compareRuns(
      run("a", () => 0.5, 1),
      run("b", () => 1, 1),
    );
    const one = change(single, "local", "latency_p50_ms");
    expect(one).toMatchObject({ significant: false, test: { method: "n<2: no test", p: null } });
    expect(comparisonText(single)).toMatch(
      /local\s+p50 ms\s+0\.50\s+1\.00\s+\+100\.0% \(untested\)\s+n<2: no test/,
    );
    expect(regressions(single, 5)).toEqual([]);
  });

  test("latencies are tested on their logarithms: a 10× change over spread repeats is significant", () => {
    // read_heavy's local had repeats 0.26 to 2.55 ms apart: on raw values Welch's p was 0.32 for 10× slower.
    const slow = [0.26, 0.42, 1.3];
    const p50 = change(
      compareRuns(
        run("a", (i) => slow[i] as number, 3),
        run("b", (i) => 10 * (slow[i] as number), 3),
      ),
      "local",
      "latency_p50_ms",
    );
    expect(p50?.test.method).toBe("welch");
    expect(p50?.test.p as number).toBeLessThan(0.05);
    expect(p50?.significant).toBe(true);
    // The hit ratio stays on its own scale: a ratio's changes add.
    expect(METRICS.find((m) => m.name === "hit_ratio")?.scale).toBe("linear");
  });

  test("a machine difference is printed with its consequence; same settings say so", () => {
    const a = run("a", () => 0.5);
    const b = run("b", () => 0.5, 5, { cpu_model: "EPYC", pg_driver: "Bun.SQL" });
    const text = comparisonText(compareRuns(a, b));
    expect(text).toContain("cpu_model: Xeon → EPYC");
    expect(text).toContain("different CPU (cpu_model): compare ratios, not rates");
    expect(text).toContain("different clients (pg_driver): a change includes the client's");
    expect(
      comparisonText(
        compareRuns(
          a,
          run("b", () => 0.5),
        ),
      ),
    ).toContain("same machine, versions, clients, server and attack settings on both sides");
    expect(
      consequenceLines([
        { kind: "machine", column: "mem_total_gb", a: ["8"], b: ["16"] },
        { kind: "versions", column: "bun_version", a: ["1.4.4"], b: ["1.5.0"] },
        { kind: "versions", column: "git_sha", a: ["abc"], b: ["def"] },
        { kind: "server", column: "l1_max_entries", a: ["10000"], b: ["1000"] },
      ]),
    ).toEqual([
      "different machine (mem_total_gb): compare ratios, not rates",
      "different versions (bun_version): a change may be theirs, not the code's",
      "different commits (git_sha): a change may be the code's, which is what a before/after asks",
      "different server or seed settings (l1_max_entries): a change may be the setting's",
    ]);
    expect(consequenceLines([{ kind: "attack", column: "duration_s", a: ["10"], b: ["3"] }])).toEqual([
      "different attack settings (duration_s): same names, not the same workload",
    ]);
  });

  test("Valkey against Redis is a difference of versions; a CSV from before redis_server is Redis", () => {
    const redis = { redis_server: "redis", redis_version: "7.0.15" };
    const older = run("a", () => 0.5, 5, { redis_version: "7.0.15" }).map((r) => {
      const { redis_server: _dropped, ...before } = r;
      return before;
    });
    const onValkey = run("b", () => 0.5, 5, { redis_server: "valkey", redis_version: "9.1.2" });
    expect(
      compareRuns(
        older,
        run("b", () => 0.5, 5, redis),
      ).differences,
    ).toEqual([]);
    expect(compareRuns(older, onValkey).differences).toEqual([
      { kind: "versions", column: "redis_server", a: ["redis"], b: ["valkey"] },
      { kind: "versions", column: "redis_version", a: ["7.0.15"], b: ["9.1.2"] },
    ]);
  });

  test("invalid rows are left out, counted and named; a cell on one side only is listed", () => {
    const a = run("a", () => 0.5);
    const b = [
      ...run("b", () => 0.5),
      row({
        run_id: "b",
        strategy: "local",
        repeat: 6,
        valid: false,
        invalid_reason: "errors 3% > 1%",
        latency_p50_ms: 99,
      }),
      row({ run_id: "b", strategy: "redis", repeat: 1 }),
    ];
    const comparison = compareRuns(a, b);
    expect(comparison.b.invalid).toHaveLength(1);
    expect(change(comparison, "local", "latency_p50_ms")?.b?.n).toBe(5);
    const text = comparisonText(comparison);
    expect(text).toContain("11 valid rows, 1 invalid left out");
    expect(text).toContain("invalid: read_heavy · zipf_reads · vegeta · local r6: errors 3% > 1%");
    expect(text).toContain("only in B (not compared): read_heavy · zipf_reads · vegeta · redis");
  });
});
