import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { reportHtml } from "./report_html.ts";
import {
  ARTIFACTS,
  DOWN,
  HANG,
  outageRows,
  outageTimeline,
  row,
  rows,
  traceCurves,
  traceRows,
} from "./report_testing.ts";

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
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-report-"));
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
    // A decision card per group, first; the report's own tables below them.
    expect(await page.locator("section.card").count()).toBe(1 + 3 + 2);
    expect(await page.locator("section:not(.card) table").count()).toBe(1 + 3 + 2);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "report-test.png"), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  test("a timeline chart shades each fault window over exactly its seconds, with axes and labels", async () => {
    const html = await reportHtml(outageRows(), { timeline: outageTimeline() });
    const file = join(mkdtempSync(join(testTmpdir(), "cachelab-report-")), "timeline.html");
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
    expect(await page.locator("section:not(.card) table").count()).toBe(2 + 3);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "report-timeline-test.png"), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
  test("a trace group's curves: a line per method, the configured rule, the measured points where they sit", async () => {
    const html = await reportHtml(traceRows(), { curves: traceCurves() });
    const file = join(mkdtempSync(join(testTmpdir(), "cachelab-report-")), "trace.html");
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`file://${file}`);
    const chart = page.locator("figure.chart.curves");
    expect(await chart.count()).toBe(1);
    type Box = { left: number; right: number; top: number; bottom: number };
    const boxes = (selector: string) =>
      chart.locator(selector).evaluateAll((elements) =>
        elements.map((element) => {
          const r = (element as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect();
          return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
        }),
      );
    const center = (b: Box) => (b.left + b.right) / 2;
    expect(await boxes("g.curves_marks path")).toHaveLength(3);
    const points = await boxes("g.measured_marks path");
    // local, two_tier (at 150) and redis (at the 1 500-key working set); none has no cache, so no point.
    expect(points).toHaveLength(3);
    const rule = (await chart
      .locator("g.mark-rule.role-mark line")
      .evaluateAll((lines) =>
        lines.map(
          (line) => (line as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect().left,
        ),
      )) as number[];
    expect(rule).toHaveLength(1);
    const atRule = points.filter((p) => Math.abs(center(p) - (rule[0] as number)) < 1.5);
    expect(atRule).toHaveLength(2);
    expect(await chart.locator("figcaption").textContent()).toContain("two_tier 0.470 at 150 entries (L1+L2");
    expect(problems).toEqual([]);
    await page.close();
  });
});
