import { describe, expect, test } from "bun:test";
import { reportMarkdown } from "./report_markdown.ts";
import { timelineCells } from "./report_tables.ts";
import { outage, outageRows, outageTimeline, RUN_ID, row, rows } from "./report_testing.ts";
import { summarize } from "./summary.ts";

describe("report markdown", () => {
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

  test("keys expiring within the run add who waited on reloads; a TTL longer than the run does not", () => {
    const stampede = (ttl: number) => [
      row({
        strategy: "local",
        repeat: 1,
        cache_ttl_ms: ttl,
        load_waits: 240,
        refresh_loads: 10,
        loads_per_key_per_ttl: 1.035,
      }),
    ];
    const text = reportMarkdown(stampede(1_000));
    expect(text).toContain("| load waits | refresh loads | loads / key / TTL |");
    expect(text).toContain("| 240 | 10 | 1.035 |");
    expect(reportMarkdown(stampede(60_000))).not.toContain("load waits");
  });

  test("a percentile below the tool's resolution reads < 1, never 0", () => {
    const whole = [
      row({ strategy: "local", repeat: 1, tool: "autocannon", latency_p50_ms: 0, latency_resolution_ms: 1 }),
    ];
    const text = reportMarkdown(whole);
    expect(text).toContain("| < 1 | 5.00 | 9.00 |");
    expect(text).not.toContain("| 0.00 |");
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
