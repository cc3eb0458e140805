import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { compareRuns } from "./comparison.ts";
import { COLUMNS, type CsvRow, formatRow } from "./csv.ts";
import { reportMarkdown } from "./report_markdown.ts";
import { row, rows } from "./report_testing.ts";
import {
  machineLines,
  parseRows,
  RESULTS_IDENTITY_COLUMNS,
  type ResultRow,
  redisServerLabel,
  summarize,
  valueAsRead,
} from "./summary.ts";

describe("report aggregation", () => {
  test("summarize gives median and min–max across repeats and excludes invalid rows", () => {
    const [group] = summarize(rows());
    const none = group?.strategies.find((s) => s.strategy === "none");
    const local = group?.strategies.find((s) => s.strategy === "local");
    expect(none?.p99Ms).toEqual({ median: 5, min: 4, max: 6, n: 3 });
    expect(local?.valid).toBe(2);
    expect(local?.invalid).toBe(1);
    expect(local?.achievedRps).toEqual({ median: 995, min: 990, max: 1_000, n: 2 });
    expect(local?.dbQueriesPerS?.median).toBe(90);
    expect(group?.invalid).toEqual([{ strategy: "local", repeat: 3, reason: "dropped load: achieved 500" }]);
  });

  test("ratios are taken against the baseline strategy's medians", () => {
    const local = summarize(rows())[0]?.strategies.find((s) => s.strategy === "local");
    expect(local?.vsBaseline.p99Ms).toBeCloseTo(1.5 / 5, 10);
    expect(local?.vsBaseline.dbQueriesPerS).toBeCloseTo(90 / 1_000, 10);
    expect(local?.vsBaseline.achievedRps).toBeCloseTo(995 / 1_000, 10);
    const againstLocal = summarize(rows(), { baseline: "local" })[0]?.strategies.find(
      (s) => s.strategy === "none",
    );
    expect(againstLocal?.vsBaseline.p99Ms).toBeCloseTo(5 / 1.5, 10);
  });

  test("unlike attacks are never merged into one number", () => {
    const mixed = [...rows(), row({ strategy: "none", repeat: 1, offered_rps: 2_000, latency_p99_ms: 50 })];
    const groups = summarize(mixed);
    expect(groups).toHaveLength(2);
    expect(groups.map((g) => g.offeredRps)).toEqual([1_000, 2_000]);
  });

  test("rows from different machines, versions or seeds are flagged", () => {
    const mixed = rows();
    mixed[1] = { ...mixed[1], cpu_model: "EPYC", bun_version: "1.4.5" } as ResultRow;
    mixed[2] = { ...mixed[2], seed: 43 } as ResultRow;
    const [group] = summarize(mixed);
    expect(group?.warnings).toEqual([
      "rows from different machines: cpu_model = Xeon | EPYC",
      "rows from different versions: bun_version = 1.4.4 | 1.4.5",
      "rows from different seeds: seed =  | 43",
    ]);
    expect(reportMarkdown(mixed)).toContain("> ⚠ rows from different machines: cpu_model = Xeon | EPYC");
  });

  test("a row names the server its Redis tiers ran on, Valkey by its own version; a CSV from before the column reads as Redis", () => {
    const before = (r: ResultRow): ResultRow => {
      const { redis_server: _dropped, ...older } = r;
      return { ...older, redis_version: "7.0.15" };
    };
    const onRedis = (r: ResultRow): ResultRow => ({ ...r, redis_server: "redis", redis_version: "7.0.15" });
    const onValkey = (r: ResultRow): ResultRow => ({ ...r, redis_server: "valkey", redis_version: "9.1.2" });
    const [first, second, third] = rows() as [ResultRow, ResultRow, ResultRow];
    expect([
      redisServerLabel(before(first)),
      redisServerLabel(onRedis(first)),
      redisServerLabel(onValkey(first)),
    ]).toEqual(["Redis 7.0.15", "Redis 7.0.15", "Valkey 9.1.2"]);
    expect(valueAsRead(before(first), "redis_server")).toBe("redis");
    expect(valueAsRead({ ...first, redis_server: null }, "redis_server")).toBe(""); // a row that failed: unknown
    // Rows from before the column and rows on Redis are one server; Valkey's are flagged as another.
    expect(summarize([before(first), onRedis(second), onRedis(third)])[0]?.warnings).toEqual([]);
    expect(summarize([onRedis(first), onValkey(second), onRedis(third)])[0]?.warnings).toEqual([
      "rows from different versions: redis_server = redis | valkey; redis_version = 7.0.15 | 9.1.2",
    ]);
    expect(machineLines([onValkey(first)])[0]).toContain(" · Valkey 9.1.2 (");
  });

  test("a strategy whose valid repeats' p50s differ more than 2× is flagged, with what its rows recorded", () => {
    const cell = (
      strategy: string,
      p50s: number[],
      extra: (i: number) => Record<string, unknown> = () => ({}),
    ) =>
      p50s.map((p50, i) => row({ strategy, repeat: i + 1, latency_p50_ms: p50, valid: true, ...extra(i) }));
    const [group] = summarize([
      ...cell("none", [0.5, 0.55, 0.6], () => ({ other_cpu_per_s: 0.01 })),
      ...cell("local", [2.55, 0.26, 0.42]),
      ...cell("redis", [0.3, 0.9, 0.35], () => ({ other_cpu_per_s: 0.02 })),
      // An invalid repeat is not one of the cell's: only valid ones are compared.
      row({ strategy: "none", repeat: 4, latency_p50_ms: 9, valid: false, invalid_reason: "x" }),
    ]);
    expect(group?.warnings).toEqual([
      "local's p50 differs 9.81× across its valid repeats (r1 2.55, r2 0.26, r3 0.42 ms), more than 2×: the rows do not record the CPU other processes used (other_cpu_per_s): a stray process is not ruled out",
      "redis's p50 differs 3.00× across its valid repeats (r1 0.30, r2 0.90, r3 0.35 ms), more than 2×: other processes' CPU 0.02, 0.02, 0.02 cores: no stray process recorded, cause not found",
    ]);
    const steps = summarize(
      cell("none", [139.3, 25.9], (i) => ({
        warnings: `capacity step pool at 385 rps ${i === 0 ? "broke: p99 1200.00 ms > 100 ms" : "held: p99 41.00 ms ≤ 100 ms"}`,
      })),
    );
    expect(steps[0]?.warnings[0]).toContain(
      "a capacity search ran this step again at its break (one held, one broke)",
    );
  });

  test("parseRows reads what the CSV writer wrote, types included", () => {
    const written = rows().map((r) => formatRow(r as CsvRow));
    const parsed = parseRows(`${COLUMNS.join(",")}\n${written.join("")}`);
    expect(parsed[3]?.hit_ratio).toBe(0.9);
    expect(parsed[5]?.valid).toBe(false);
    expect(parsed[0]?.strategy).toBe("none");
    expect(parsed[0]?.stale_reads).toBeNull();
  });

  test("parseRows with the results columns refuses another kind of CSV, naming what its header lacks", () => {
    const curves = "run_id,experiment,attack,method\nr,e,a,lru\n";
    expect(parseRows(curves, { path: "c.csv" })).toHaveLength(1);
    expect(() => parseRows(curves, { path: "c.csv", columns: RESULTS_IDENTITY_COLUMNS })).toThrow(
      "Cannot read c.csv: its header is not a results CSV's: it has no strategy: received run_id,experiment,attack,method",
    );
  });

  test("a committed CSV from before miss_cost_ms and redis_rtt_ms reads whole, and its rows have neither", () => {
    // read_heavy's reference run of 2 December 2026 (docs/results/read_heavy.csv at that date), kept as it was.
    const path = join(REPO_ROOT, "lab", "results", "testdata", "read_heavy_before_round_trips.csv");
    const text = readFileSync(path, "utf8");
    // An older header: without it this test would read nothing old.
    expect(text.split("\n")[0]).not.toContain("miss_cost_ms");
    const old = parseRows(text, { path });
    expect(old.length).toBe(12);
    expect(old.every((r) => !("miss_cost_ms" in r) && !("redis_rtt_ms" in r))).toBe(true);
    const [group, ...others] = summarize(old);
    expect(others).toEqual([]);
    expect(group?.strategies.map((s) => s.strategy)).toEqual(["none", "local", "redis", "two_tier"]);
  });

  test("rows that differ only in the miss cost asked are different attacks, never one number", () => {
    const written = rows()
      .slice(0, 2)
      .map((r, i) =>
        formatRow({
          ...(r as CsvRow),
          strategy: "none",
          miss_cost_ms: i === 0 ? null : 5,
          miss_cost_added_ms: 0,
        }),
      );
    const parsed = parseRows(`${COLUMNS.join(",")}\n${written.join("")}`);
    expect(parsed.map((r) => r.miss_cost_ms)).toEqual([null, 5]);
    expect(parsed.map((r) => valueAsRead(r, "miss_cost_ms"))).toEqual(["", "5"]);
    expect(summarize(parsed).length).toBe(2);
  });

  test("a CSV from before the lab measured its own base reads whole; its miss_cost_ms was added, and says so", () => {
    // network_rtt's reference run (docs/results/network_rtt.csv before *_added_ms), two of its attacks, kept
    // as they were: there `miss_cost_ms` and `redis_rtt_ms` are the round trip added, not a figure asked.
    const path = join(REPO_ROOT, "lab", "results", "testdata", "network_rtt_before_base.csv");
    const text = readFileSync(path, "utf8");
    expect(text.split("\n")[0]).toContain(",miss_cost_ms,redis_rtt_ms,");
    expect(text.split("\n")[0]).not.toContain("_added_ms");
    const old = parseRows(text, { path });
    expect(old.length).toBe(10);
    expect(old.every((r) => !("miss_cost_added_ms" in r) && !("miss_cost_base_ms" in r))).toBe(true);
    const far = old.find((r) => r.attack === "proxy_1ms_rate_1000") as ResultRow;
    expect([valueAsRead(far, "miss_cost_ms"), valueAsRead(far, "redis_rtt_ms")]).toEqual([
      "2 (added)",
      "2 (added)",
    ]);
    expect(summarize(old).map((group) => [group.attack, group.strategies.length])).toEqual([
      ["direct_rate_1000", 5],
      ["proxy_1ms_rate_1000", 5],
    ]);
    // Against a newer run asking 2 ms, the comparison shows the two meanings apart.
    const asked = old.map((r) => ({ ...r, run_id: "new", miss_cost_ms: 2, miss_cost_added_ms: 1.8 }));
    const difference = compareRuns(old, asked).differences.find((d) => d.column === "miss_cost_ms");
    expect(difference).toMatchObject({ a: ["0 (added)", "2 (added)"], b: ["2"] });
  });
});
