import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { COLUMNS, type CsvRow, formatRow } from "./csv.ts";
import { parseRows, type ResultRow, reportMarkdown, summarize } from "./report.ts";
import { reportHtml } from "./report_html.ts";
import { REPO_ROOT } from "../shared/repo.ts";

const ARTIFACTS = join(REPO_ROOT, "artifacts");

function row(overrides: Partial<Record<string, string | number | boolean | null>>): ResultRow {
  const base: ResultRow = Object.fromEntries(COLUMNS.map((column) => [column, null]));
  return {
    ...base,
    experiment: "read_heavy",
    attack: "zipf_reads",
    tool: "vegeta",
    tool_version: "12.13.0",
    load_model: "open",
    offered_rps: 1_000,
    connections: 256,
    duration_s: 10,
    request_mix: "detail:1:GET /products/{id}",
    key_distribution: "zipf",
    key_params: "exponent=1.1",
    keyspace: 100_000,
    valid: true,
    completed: 10_000,
    ok: 10_000,
    errors: 0,
    achieved_rps: 1_000,
    latency_p50_ms: 1,
    latency_p90_ms: 2,
    latency_p99_ms: 5,
    latency_p99_9_ms: 9,
    hit_ratio: 0,
    db_queries: 10_000,
    cpu_model: "Xeon",
    cpu_count: 2,
    os: "Debian 12",
    bun_version: "1.4.4",
    ...overrides,
  };
}

/** Three repeats of none and local, one invalid local row. */
function rows(): ResultRow[] {
  return [
    row({ strategy: "none", repeat: 1, latency_p99_ms: 4, db_queries: 10_000 }),
    row({ strategy: "none", repeat: 2, latency_p99_ms: 6, db_queries: 10_000 }),
    row({ strategy: "none", repeat: 3, latency_p99_ms: 5, db_queries: 10_000 }),
    row({
      strategy: "local",
      repeat: 1,
      latency_p99_ms: 2,
      hit_ratio: 0.9,
      db_queries: 1_000,
      achieved_rps: 990,
    }),
    row({
      strategy: "local",
      repeat: 2,
      latency_p99_ms: 1,
      hit_ratio: 0.92,
      db_queries: 800,
      achieved_rps: 1_000,
    }),
    row({
      strategy: "local",
      repeat: 3,
      valid: false,
      invalid_reason: "dropped load: achieved 500",
      achieved_rps: 500,
    }),
  ];
}

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

  test("reportMarkdown lists the machine, the table and the invalid rows with reasons", () => {
    const text = reportMarkdown(rows());
    expect(text).toContain("**Measured on:**");
    expect(text).toContain("| none | 3/3 | 1000 | 1.00 | 5.00 (4.00–6.00) |");
    expect(text).toContain("| local | 2/3 | 995 (990–1000) |");
    expect(text).toContain("Invalid rows, excluded: 1");
    expect(text).toContain("- local r3: dropped load: achieved 500");
  });

  test("the table shows the simulated hit ratio and measured ÷ simulated beside the measured one", () => {
    const simulated = [
      row({
        strategy: "local",
        repeat: 1,
        hit_ratio: 0.78,
        hit_ratio_expected: 0.8,
        hit_ratio_optimal: 0.85,
      }),
    ];
    const text = reportMarkdown(simulated);
    expect(text).toContain("| hit ratio | simulated | hit ÷ sim | optimal |");
    expect(text).toContain("| 0.780 | 0.800 | 0.975 | 0.850 |");
  });

  test("a percentile below the tool's resolution reads < 1, never 0", () => {
    const whole = [
      row({ strategy: "local", repeat: 1, tool: "autocannon", latency_p50_ms: 0, latency_resolution_ms: 1 }),
    ];
    const text = reportMarkdown(whole);
    expect(text).toContain("| < 1 | 5.00 | 9.00 |");
    expect(text).not.toContain("| 0.00 |");
  });

  test("parseRows reads what the CSV writer wrote, types included", () => {
    const written = rows().map((r) => formatRow(r as CsvRow));
    const parsed = parseRows(`${COLUMNS.join(",")}\n${written.join("")}`);
    expect(parsed[3]?.hit_ratio).toBe(0.9);
    expect(parsed[5]?.valid).toBe(false);
    expect(parsed[0]?.strategy).toBe("none");
    expect(parsed[0]?.stale_reads).toBeNull();
  });
});

describe("report page in a real browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  test("every chart renders as SVG with marks and the page logs no errors", async () => {
    const saturation = [1_000, 2_000, 4_000].flatMap((rate) =>
      ["none", "local"].map((strategy) =>
        row({
          experiment: "saturation",
          attack: `rate_${rate}`,
          offered_rps: rate,
          strategy,
          repeat: 1,
          achieved_rps: rate * 0.99,
          latency_p99_ms: rate / 100,
        }),
      ),
    );
    const passes = ["pass1_miss", "pass2_hit"].flatMap((attack) =>
      ["none", "redis"].map((strategy) => row({ experiment: "cold_start", attack, strategy, repeat: 1 })),
    );
    const html = await reportHtml([...rows(), ...saturation, ...passes]);
    const dir = mkdtempSync(join(tmpdir(), "cachelab-report-"));
    const file = join(dir, "report.html");
    writeFileSync(file, html);
    expect(html).not.toContain("<script");
    expect(html).not.toMatch(/(src|href)="https?:/);

    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`file://${file}`);
    const charts = page.locator("figure.chart > svg");
    // read_heavy: 2 charts; saturation: curves + 2 per step (3 steps); cold_start: passes + 2 per pass.
    expect(await charts.count()).toBe(2 + 1 + 6 + 1 + 4);
    for (let i = 0; i < (await charts.count()); i++) {
      const marks = await charts
        .nth(i)
        .locator("g.mark-rect path, g.mark-line path, g.mark-symbol path, g.mark-rule line")
        .count();
      expect({ chart: i, hasMarks: marks > 0 }).toEqual({ chart: i, hasMarks: true });
    }
    expect(await page.locator("table").count()).toBe(1 + 3 + 2);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "report-test.png"), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe("report command", () => {
  const cli = join(import.meta.dir, "..", "cli", "report.ts");

  test("bad format, unknown experiment and missing file exit 2 with the reason", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachelab-report-cli-"));
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
});
