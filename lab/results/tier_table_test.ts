import { describe, expect, test } from "bun:test";
import { reportHtml } from "./report_html.ts";
import { reportMarkdown } from "./report_markdown.ts";
import { row } from "./report_testing.ts";
import { summarize } from "./summary.ts";
import { tierTable } from "./tier_table.ts";

/** A row with the server's tier counts and timings, as the runner writes them from /stats. */
function timed(
  strategy: string,
  repeat: number,
  tiers: Record<string, [number, number, number, number]>,
  outcomes = ["l1_hit", "l2_hit", "miss", "join"],
) {
  const columns: Record<string, number | null> = {};
  for (const tier of outcomes) {
    const [count, mean, p50, p99] = tiers[tier] ?? [0, null, null, null];
    Object.assign(columns, {
      [`srv_${tier}_count`]: count,
      [`srv_${tier}_mean_ms`]: mean,
      [`srv_${tier}_p50_ms`]: p50,
      [`srv_${tier}_p99_ms`]: p99,
    });
  }
  return row({ strategy, repeat, ...columns });
}

const tracking = [
  timed("local", 1, { l1_hit: [700, 0.012, 0.01, 0.05], miss: [300, 0.9, 0.6, 4] }),
  timed("tracking", 1, {
    l1_hit: [600, 0.014, 0.01, 0.06],
    l2_hit: [100, 0.4, 0.3, 2],
    miss: [300, 1.8, 1.2, 9],
  }),
  timed("tracking", 2, {
    l1_hit: [650, 0.016, 0.01, 0.08],
    l2_hit: [50, 0.6, 0.35, 3],
    miss: [300, 2.0, 1.4, 11],
  }),
];

describe("the tier table", () => {
  test("each tier's share of reads and its server-side mean / p50 / p99, medians over the repeats", () => {
    const [group] = summarize(tracking);
    const table = tierTable(group as NonNullable<typeof group>);
    expect(table?.head).toEqual([
      "strategy",
      "in-process hits",
      "in-process hit ms (mean / p50 / p99)",
      "Redis hits",
      "Redis hit ms (mean / p50 / p99)",
      "misses",
      "miss ms (mean / p50 / p99)",
      "joins",
      "join ms (mean / p50 / p99)",
    ]);
    expect(table?.rows).toEqual([
      [
        "local",
        "0.700",
        "0.012 / 0.010 / 0.050",
        "0.000",
        "—",
        "0.300",
        "0.900 / 0.600 / 4.000",
        "0.000",
        "—",
      ],
      [
        "tracking",
        "0.625 (0.600–0.650)",
        "0.015 / 0.010 / 0.070",
        "0.075 (0.050–0.100)",
        "0.500 / 0.325 / 2.500",
        "0.300",
        "1.900 / 1.300 / 10.000",
        "0.000",
        "—",
      ],
    ]);
  });

  test("joins apart: their share and time; a row from before they were counted apart has none to show", () => {
    const joins = timed("redis", 1, {
      l2_hit: [600, 0.2, 0.2, 1],
      miss: [300, 1.2, 1, 5],
      join: [100, 0.6, 0.5, 2],
    });
    const older = timed("redis", 2, { l2_hit: [700, 0.2, 0.2, 1], miss: [300, 1.2, 1, 5] }, [
      "l1_hit",
      "l2_hit",
      "miss",
    ]);
    const [group] = summarize([joins]);
    expect(tierTable(group as NonNullable<typeof group>)?.rows[0]?.slice(-2)).toEqual([
      "0.100",
      "0.600 / 0.500 / 2.000",
    ]);
    const [old] = summarize([older]);
    const row = tierTable(old as NonNullable<typeof old>)?.rows[0];
    expect(row?.slice(-2)).toEqual(["n/a", "—"]);
    expect(row?.[3]).toBe("0.700"); // its Redis hits still a share of its reads
  });

  test("invalid repeats are left out of it, as from the comparison table", () => {
    const withInvalid = [
      ...tracking,
      { ...timed("local", 2, { l1_hit: [100, 5, 5, 5], miss: [900, 9, 9, 9] }), valid: false },
    ];
    const [group] = summarize(withInvalid);
    expect(tierTable(group as NonNullable<typeof group>)?.rows[0]?.[1]).toBe("0.700");
  });

  test("rows without the server's timings (TIER_TIMING=0, older files) give no table, not zeros", () => {
    const [group] = summarize([row({ strategy: "local", repeat: 1 })]);
    expect(tierTable(group as NonNullable<typeof group>)).toBeNull();
    expect(reportMarkdown([row({ strategy: "local", repeat: 1 })])).not.toContain("in-process hits");
  });

  test("the Markdown and the HTML report print it under the comparison table", async () => {
    expect(reportMarkdown(tracking)).toContain("| tracking | 0.625 (0.600–0.650) | 0.015 / 0.010 / 0.070 |");
    const html = await reportHtml(tracking);
    expect(html).toContain("<th>in-process hit ms (mean / p50 / p99)</th>");
    expect(html).toContain("<td>0.500 / 0.325 / 2.500</td>");
  });
});
