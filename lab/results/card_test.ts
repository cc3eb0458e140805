import { describe, expect, test } from "bun:test";
import { buildCards, cardHtml, cardMarkdown, figuresOf } from "./card.ts";
import { reportMarkdown } from "./report_markdown.ts";
import { cardRows, row, rows } from "./report_testing.ts";
import { summarize } from "./summary.ts";

describe("decision card", () => {
  test("figures: per-repeat latencies as samples, DB per second, CPU per 1 000 requests, text shed read", () => {
    const local = figuresOf("local", cardRows());
    expect(local.p99Ms).toEqual([7.9, 8, 8.1]);
    expect(local.dbQueriesPerS).toBe(100);
    expect(local.cpuMsPer1kRequests).toBeCloseTo(120, 9);
    expect(local.shed).toBe(0);
    // A missing column stays missing, never 0.
    expect(figuresOf("local", rows()).cpuMsPer1kRequests).toBeNull();
  });

  test("Markdown: ranked with 75% intervals of 3 repeats, the pick with its condition, break-evens unchecked", () => {
    const [card] = buildCards(summarize(cardRows()));
    const text = cardMarkdown(card as NonNullable<typeof card>).join("\n");
    expect(text).toContain("### Decision card: read_heavy · zipf_reads · vegeta");
    expect(text).toContain(
      "**Pick: local (~ two_tier: not distinguishable on p99) — p99 intervals at 75% confidence**",
    );
    expect(text).toContain(
      "- two_tier if you run more than one instance and need staleness under its TTL, 60000 ms",
    );
    expect(text).toContain("Ranked on p99 (then p50): local ~ two_tier < redis < none");
    expect(text).toContain(
      "| 1 | local | 3 | 1000 [1000–1000, 75%] | 1.00 [0.99–1.01, 75%] | 8.00 [7.90–8.10, 75%] |",
    );
    expect(text).toContain("- local: p50 −67%, p99 −60%, DB −90%, CPU/1k req −40%, memory +10 MB RSS");
    expect(text).toContain("RTT* = h × (t_miss − t_L1) = 0.900 × (3.00 ms − 1.00 ms) = 1.80 ms");
    expect(text).toContain("check: not checked: no network_rtt or miss_cost rows");
    expect(text).toContain("order-statistic (distribution-free) interval of the median");
  });

  test("closed model: ranked and picked on throughput, even where the faster strategy's p99 is higher", () => {
    const closed = cardRows().map((r) => ({
      ...r,
      load_model: "closed",
      offered_rps: null,
      connections: 32,
      // none answers 4 000 rps, every cache 9 000 (±10 a repeat), with none's p99 made the lowest.
      achieved_rps: (r.strategy === "none" ? 4_000 : 9_000) + (Number(r.repeat) - 2) * 10,
      latency_p99_ms: r.strategy === "none" ? 5 + Number(r.repeat) * 0.1 : (r.latency_p99_ms ?? null),
    }));
    const [card] = buildCards(summarize(closed));
    const text = cardMarkdown(card as NonNullable<typeof card>).join("\n");
    expect(text).toContain(
      "Ranked on throughput (then p99; closed model, 32 connections: a faster strategy queues more",
    );
    expect(card?.order).toEndWith("> none");
    expect(card?.pick).toContain(
      "not distinguishable on throughput) — throughput intervals at 75% confidence",
    );
    expect(card?.pick).not.toStartWith("none");
  });

  test("one repeat: the card says it has no confidence", () => {
    const once = cardRows().filter((r) => r.repeat === 1);
    const [card] = buildCards(summarize(once));
    expect(card?.pick).toBe("local — no confidence: 1 repeat");
    expect(card?.table.rows[0]?.[4]).toBe("0.99 (no interval, n=1)");
    const invalid = once.map((r) => (r.strategy === "redis" ? { ...r, valid: false } : r));
    const withInvalid = cardRows().map((r) =>
      r.strategy === "local" && r.repeat === 3 ? { ...r, valid: false } : r,
    );
    expect(buildCards(summarize(withInvalid))[0]?.table.rows.find((r) => r[1] === "local")?.[2]).toBe(
      "2 (+1 invalid)",
    );
    expect(buildCards(summarize(invalid))[0]?.pick).toBe(
      "local — no confidence: 1 repeat; no valid rows, not ranked: redis (see the invalid rows)",
    );
  });

  test("network_rtt-like siblings: the break-even is checked against the farther path's rows", () => {
    const near = cardRows({ experiment: "network_rtt", attack: "direct" });
    const far = cardRows({
      experiment: "network_rtt",
      attack: "proxy_1ms",
      path: "toxiproxy +1 ms each way",
      addedMs: 2,
    });
    const [direct] = buildCards(summarize([...near, ...far]));
    // Direct: RTT 1 ms, D 2 ms, h 0.9. At +2 ms each side: RTT 3 < 0.9 × 4 = 3.6, redis saves; its mean 4.6 < 6.
    expect(direct?.checks).toEqual([
      "proxy_1ms: predicted redis saves (RTT 3.00 ms vs h·D 3.60 ms); measured mean redis 4.60 ms vs none 6.00 ms: rows agree",
    ]);
  });

  test("HTML: the card as an escaped section with its table", () => {
    const [card] = buildCards(summarize(cardRows()));
    const html = cardHtml(card as NonNullable<typeof card>);
    expect(html).toStartWith(
      '<section class="card"><h3>Decision card: read_heavy · zipf_reads · vegeta</h3>',
    );
    expect(html).toContain("<th>p99 ms [interval, confidence]</th>");
    expect(html).toContain("Ranked on p99 (then p50): local ~ two_tier &lt; redis &lt; none");
  });

  test("the Markdown report opens with the card, before the machine block", () => {
    const report = reportMarkdown([...cardRows(), row({ strategy: "none", repeat: 4, valid: false })]);
    expect(report).toStartWith("### Decision card: read_heavy · zipf_reads · vegeta");
    expect(report.indexOf("**Measured on:**")).toBeGreaterThan(report.indexOf("Break-evens"));
  });
});
