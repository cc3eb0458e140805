import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { REPO_ROOT } from "../shared/repo.ts";
import { appendRow, COLUMNS, type CsvRow, formatRow } from "./csv.ts";
import { reportHtml } from "./report_html.ts";
import { parseRows, type ResultRow, reportMarkdown, summarize, timelineCells } from "./report_markdown.ts";
import { appendTimeline, type TimelineRow } from "./timeline.ts";

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

const RUN_ID = "20260101T000000-abcd1234";
const START_EPOCH_S = 1_767_225_600;
const DOWN = [5, 6, 7, 8, 9];
const HANG = [20, 21, 22, 23];

/**
 * A redis outage as a 30-second timeline: Redis down at seconds 5–9 and restarted empty (the hit ratio climbs
 * back over four seconds), then hanging at 20–23 (it accepts commands and answers none: p99 climbs towards
 * the command timeout, and vegeta times requests out). Steady seconds jitter 0.79/0.80/0.81 around 0.80.
 * two_tier's L1 keeps answering through both; wrk gives no per-second account, so only the server's counters.
 */
function outage(strategy: "redis" | "two_tier", options: { repeat?: number; tool?: "vegeta" | "wrk" } = {}) {
  const tool = options.tool ?? "vegeta";
  const climb: Record<number, number> = { 10: 0.45, 11: 0.62, 12: 0.71, 13: 0.78 };
  const hangP99: Record<number, number> = { 20: 40, 21: 180, 22: 500, 23: 510 };
  const hangFailed: Record<number, number> = { 20: 10, 21: 70, 22: 130, 23: 120 };
  const downP99: Record<number, number> = { 5: 3.1, 6: 4.8, 7: 2.2, 8: 2, 9: 2.4 };
  const downFailed: Record<number, number> = { 5: 2, 6: 5 };
  return Array.from({ length: 30 }, (_, s): TimelineRow => {
    const down = DOWN.includes(s);
    const hang = HANG.includes(s);
    const steady = [0.79, 0.8, 0.81][s % 3] as number;
    // The Redis tier's ratio of its own lookups (two_tier's L2 sees only L1's misses).
    const l2 = down || hang ? 0 : strategy === "redis" ? (climb[s] ?? steady) : 1 / 3;
    const l2Lookups = strategy === "redis" ? 1_000 : 300;
    const failed = down ? (downFailed[s] ?? 0) : hang ? (strategy === "redis" ? (hangFailed[s] ?? 0) : 0) : 0;
    const p99 = down ? (downP99[s] ?? 2) : hang ? (hangP99[s] ?? 1.6) : 1.5 + (s % 3) * 0.05;
    const served = tool === "wrk" ? (hang ? 900 : 24_000) : 1_000;
    return {
      run_id: RUN_ID,
      experiment: "redis_outage",
      strategy,
      tool,
      attack: "zipf_reads",
      repeat: options.repeat ?? 1,
      second: s,
      epoch_s: START_EPOCH_S + s,
      sent: tool === "wrk" ? null : 1_000,
      ok: tool === "wrk" ? null : 1_000 - failed,
      errors: tool === "wrk" ? null : failed,
      p50_ms: tool === "wrk" ? null : down ? 0.9 : 0.24,
      p99_ms: tool === "wrk" ? null : p99,
      timeline_source: tool === "wrk" ? "none (wrk): server counters only" : "vegeta per-request results",
      server_requests: served,
      server_reads: served,
      l1_hits: strategy === "two_tier" ? 700 : null,
      l1_misses: strategy === "two_tier" ? 300 : null,
      l2_hits: Math.round(l2 * l2Lookups),
      l2_misses: l2Lookups - Math.round(l2 * l2Lookups),
      db_queries: Math.round((1 - l2) * l2Lookups),
      // Reads without a database query: two_tier's L1 answers 700 of its 1 000 whatever Redis does.
      hit_ratio: 1 - Math.round((1 - l2) * l2Lookups) / 1_000,
      cache_errors: down || hang ? l2Lookups : 0,
      faults: down ? "redis down" : hang ? "redis hang" : "",
    };
  });
}

/** The results rows of the outage runs: redis × 2 repeats and two_tier on vegeta, redis on wrk. */
function outageRows(): ResultRow[] {
  const base = { experiment: "redis_outage", attack: "zipf_reads", run_id: RUN_ID, cache_errors: 5_000 };
  const wrk = {
    tool: "wrk",
    tool_version: "4.2.0",
    load_model: "closed",
    offered_rps: null,
    connections: 32,
  };
  return [
    row({ ...base, strategy: "redis", repeat: 1 }),
    row({ ...base, strategy: "two_tier", repeat: 1 }),
    row({ ...base, strategy: "redis", repeat: 2 }),
    row({ ...base, ...wrk, strategy: "redis", repeat: 1 }),
  ];
}

function outageTimeline(): TimelineRow[] {
  return [
    ...outage("redis"),
    ...outage("two_tier"),
    ...outage("redis", { repeat: 2 }),
    ...outage("redis", { tool: "wrk" }),
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

describe("report timelines", () => {
  test("timelineCells groups seconds by run and strategy within the attack, every repeat in order", () => {
    const [vegeta, wrk] = summarize(outageRows());
    const cells = timelineCells(vegeta as NonNullable<typeof vegeta>, outageTimeline().reverse());
    expect(cells.map((c) => [c.strategy, c.tool, c.repeats.map((r) => r.repeat)])).toEqual([
      ["redis", "vegeta", [1, 2]],
      ["two_tier", "vegeta", [1]],
    ]);
    expect(cells[0]?.repeats[0]?.rows.map((r) => r.second)).toEqual([...Array(30).keys()]);
    const wrkCells = timelineCells(wrk as NonNullable<typeof wrk>, outageTimeline());
    expect(wrkCells.map((c) => [c.strategy, c.timelineSource])).toEqual([
      ["redis", "none (wrk): server counters only"],
    ]);
  });

  test("the Markdown report has a fault table per cell: worst 1-s p99, failed, recovery", () => {
    const text = reportMarkdown(outageRows(), { timeline: outageTimeline() });
    expect(text).toContain(`#### Timeline · redis · run ${RUN_ID} · vegeta per-request results`);
    expect(text).toContain(
      "| repeat | fault | seconds | worst 1-s p99 ms | failed | hit ratio before | recovery s |",
    );
    // Down: restarted empty, back within 5% of 0.80 at second 13 (0.78): 3 seconds still out after 9.
    expect(text).toContain("| 1 | redis down | 5–9 | 4.80 | 7 | 0.800 | 3 |");
    expect(text).toContain("| 1 | redis hang | 20–23 | 510.00 | 330 | 0.800 | 0 |");
    expect(text).toContain("| 2 | redis down | 5–9 | 4.80 | 7 | 0.800 | 3 |");
    // two_tier's L1 kept answering 700 of 1 000 reads; L2's share comes back with Redis at once.
    expect(text).toContain(`#### Timeline · two_tier · run ${RUN_ID} · vegeta per-request results`);
    expect(text).toContain("| 1 | redis down | 5–9 | 4.80 | 7 | 0.800 | 0 |");
    // wrk: no per-request account, so no p99 and no failed count, never 0.
    expect(text).toContain(`#### Timeline · redis · run ${RUN_ID} · none (wrk): server counters only`);
    expect(text).toContain("| 1 | redis down | 5–9 | n/a | n/a | 0.800 | 3 |");
    expect(text).toContain("recovery: whole seconds after the window");
  });

  test("a run without faults gets no fault table; orphan seconds are named", () => {
    const calm = outage("redis").map((s) => ({ ...s, faults: "", p99_ms: 1.6, errors: 0 }));
    const orphan = outage("two_tier", { repeat: 3 }).slice(0, 4);
    const results = [
      row({
        experiment: "redis_outage",
        attack: "zipf_reads",
        run_id: RUN_ID,
        strategy: "redis",
        repeat: 1,
        valid: false,
        invalid_reason: "cache errors",
      }),
    ];
    const text = reportMarkdown(results, { timeline: [...calm, ...orphan] });
    expect(text).not.toContain("#### Timeline");
    expect(text).toContain(
      `> ⚠ timeline seconds of runs without a results row, not reported: redis_outage zipf_reads two_tier r3 (run ${RUN_ID}): 4 s`,
    );
    expect(reportMarkdown(outageRows())).not.toContain("#### Timeline");
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

  test("a timeline chart shades each fault window over exactly its seconds, with axes and labels", async () => {
    const html = await reportHtml(outageRows(), { timeline: outageTimeline() });
    const file = join(mkdtempSync(join(tmpdir(), "cachelab-report-")), "timeline.html");
    writeFileSync(file, html);
    expect(html).not.toContain("<script");
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`file://${file}`);

    // Cells: redis (repeats 1 and 2, one chart), two_tier, redis on wrk.
    const timelines = page.locator("figure.chart.timeline");
    expect(await timelines.count()).toBe(3);
    // Two groups (vegeta, wrk): the experiment's per-attack chart, 2 charts each, and the 3 timelines.
    expect(await page.locator("figure.chart > svg").count()).toBe(1 + 2 * 2 + 3);
    expect(await timelines.nth(0).locator("figcaption").textContent()).toContain(
      "repeat 1 of 2 drawn; the table lists every repeat",
    );

    type Box = { left: number; right: number; top: number; bottom: number };
    const boxes = (selector: string, nth = 0) =>
      timelines
        .nth(nth)
        .locator(selector)
        .evaluateAll((elements) =>
          elements.map((element) => {
            const r = (element as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect();
            return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
          }),
        );
    const center = (b: Box) => (b.left + b.right) / 2;

    const chart = timelines.nth(0);
    const points = (await boxes("g.p99_points_marks path")).sort((a, b) => center(a) - center(b));
    expect(points).toHaveLength(30);
    // Point s sits at s + 0.5 on a linear scale: this maps seconds to pixels.
    const step = (center(points[29] as Box) - center(points[0] as Box)) / 29;
    const px = (second: number) => center(points[0] as Box) + (second - 0.5) * step;
    const windows = [
      { fault: "redis down", seconds: DOWN },
      { fault: "redis hang", seconds: HANG },
    ];
    const panelRects = await boxes("g.fault_windows_marks path");
    const stripRects = await boxes("g.fault_strip_marks path");
    // Shaded in each of the three panels (rate, p99, hit ratio), and once in the label strip.
    expect(panelRects).toHaveLength(3 * windows.length);
    expect(stripRects).toHaveLength(windows.length);
    const p99Panel = points.reduce((a, b) => ({
      left: Math.min(a.left, b.left),
      right: Math.max(a.right, b.right),
      top: Math.min(a.top, b.top),
      bottom: Math.max(a.bottom, b.bottom),
    }));
    for (const { seconds } of windows) {
      const [first, last] = [seconds[0] as number, seconds[seconds.length - 1] as number];
      const mine = [...panelRects, ...stripRects].filter((r) => Math.abs(r.left - px(first)) < 1);
      expect(mine).toHaveLength(4);
      for (const rect of mine) expect(Math.abs(rect.right - px(last + 1))).toBeLessThan(1);
      // The points under the band are exactly the fault's seconds.
      const rect = mine[0] as Box;
      const covered = points.flatMap((p, s) => (center(p) > rect.left && center(p) < rect.right ? [s] : []));
      expect(covered).toEqual(seconds);
      // And one of the panel bands spans the whole p99 panel, top to bottom.
      expect(mine.some((r) => r.top <= p99Panel.top && r.bottom >= p99Panel.bottom)).toBe(true);
    }
    // The worst second of the hang is drawn inside its band (the highest point: smallest y).
    const worst = points.reduce((a, b) => (b.top < a.top ? b : a));
    expect(HANG.map((s) => points[s])).toContain(worst);

    const labels = chart.locator("g.fault_labels_marks text");
    expect(await labels.allTextContents()).toEqual(["redis down", "redis hang"]);
    const labelBoxes = await boxes("g.fault_labels_marks text");
    expect(Math.abs((labelBoxes[0] as Box).left - px(5))).toBeLessThan(6);
    expect(Math.abs((labelBoxes[1] as Box).left - px(20))).toBeLessThan(6);
    expect(await chart.locator("g.role-axis-title text").allTextContents()).toEqual(
      expect.arrayContaining(["second of the measured run", "requests / s", "p99 ms (log)", "hit ratio"]),
    );
    expect(await chart.locator("g.role-legend-label text").allTextContents()).toEqual(["sent/s", "ok/s"]);
    expect(await chart.locator("g.rate_points_marks path").count()).toBe(60);

    // two_tier: the same panel (reads without a database query, whichever tier answered).
    expect(await timelines.nth(1).locator("g.role-axis-title text").allTextContents()).toContain("hit ratio");
    // wrk: the server's requests, labelled so; no p99 panel.
    const wrk = timelines.nth(2);
    expect(await wrk.locator("g.role-legend-label text").allTextContents()).toEqual([
      "server requests/s (wrk gives no per-second counts)",
    ]);
    expect(await wrk.locator("g.role-axis-title text").allTextContents()).not.toContain("p99 ms (log)");
    expect(await wrk.locator("g.p99_points_marks path").count()).toBe(0);
    expect(await boxes("g.fault_windows_marks path", 2)).toHaveLength(2 * windows.length);

    // The fault tables: one per cell.
    expect(await page.locator("table").count()).toBe(2 + 3);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "report-timeline-test.png"), fullPage: true });
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

  test("a row cut short (a full disk) is skipped with its file and line; the rows around it are reported", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cachelab-report-cli-"));
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
    const dir = mkdtempSync(join(tmpdir(), "cachelab-report-cli-"));
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
});
