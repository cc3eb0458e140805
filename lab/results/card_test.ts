import { describe, expect, test } from "bun:test";
import { bucketOf } from "../../server/load_timer.ts";
import { encodeHistogram } from "../model/histogram.ts";
import { buildCards, cardHtml, cardMarkdown, figuresOf } from "./card.ts";
import { reportMarkdown } from "./report_markdown.ts";
import { cardRows, row, rows } from "./report_testing.ts";
import { type ResultRow, summarize } from "./summary.ts";

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
    expect(text).toContain("- from client p50s (fallback: these rows have no srv_* columns)");
    expect(text).toContain(
      "E* = h × (t_miss − t_L1) ÷ (2 − h) = 0.900 × (3.00 ms − 1.00 ms) ÷ (2 − 0.900) = 1.64 ms",
    );
    expect(text).not.toContain("Predicted against measured");
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

  test("one repeat: no pick and no condition, only 'no confidence: 1 repeat' and the ranking as measured", () => {
    const once = cardRows().filter((r) => r.repeat === 1);
    const [card] = buildCards(summarize(once));
    expect(card?.pick).toBeNull();
    expect(card?.noPick).toBe(
      "no confidence: 1 repeat — no pick; the ranking below is as measured (3 repeats per strategy give intervals: --repeats 3)",
    );
    expect(card?.conditions).toEqual([]);
    expect(card?.order).toBe("local ? two_tier ? redis ? none");
    expect(card?.table.rows[0]?.[4]).toBe("0.99 (no interval, n=1)");
    const text = cardMarkdown(card as NonNullable<typeof card>).join("\n");
    expect(text).not.toContain("Pick:");
    expect(text).not.toContain("**");
    expect(text).toContain("\nno confidence: 1 repeat — no pick;");
    expect(text).toContain("Ranked on p99 (then p50): local ? two_tier ? redis ? none");
    const html = cardHtml(card as NonNullable<typeof card>);
    expect(html).not.toContain("Pick:");
    expect(html).not.toContain("<strong>");
    // Two repeats are still no interval: no pick either.
    const twice = buildCards(summarize(cardRows().filter((r) => r.repeat !== 3)))[0];
    expect(twice?.pick).toBeNull();
    expect(twice?.noPick).toStartWith("no confidence: 2 repeats — no pick");
    const invalid = once.map((r) => (r.strategy === "redis" ? { ...r, valid: false } : r));
    const withInvalid = cardRows().map((r) =>
      r.strategy === "local" && r.repeat === 3 ? { ...r, valid: false } : r,
    );
    expect(buildCards(summarize(withInvalid))[0]?.table.rows.find((r) => r[1] === "local")?.[2]).toBe(
      "2 (+1 invalid)",
    );
    expect(buildCards(summarize(invalid))[0]?.noPick).toEndWith(
      "(3 repeats per strategy give intervals: --repeats 3); no valid rows, not ranked: redis (see the invalid rows)",
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
    // Direct: E 1 ms, D 2 ms, h 0.9. At +2 ms each side: 3 × 1.1 = 3.3 < 0.9 × 4 = 3.6, redis saves; 4.6 < 6.
    expect(direct?.checks).toEqual([
      "proxy_1ms: predicted redis saves (E·(2 − h) 3.30 ms vs h·D 3.60 ms, E 3.00 ms); measured mean redis 4.60 ms vs none 6.00 ms: rows agree",
    ]);
  });

  test("server-side tier costs: break-evens even where the client p50s are not ordered", () => {
    const srv: Record<string, Record<string, number>> = {
      none: { srv_miss_count: 1_000, srv_miss_mean_ms: 1.0 },
      local: { srv_l1_hit_count: 900, srv_l1_hit_mean_ms: 0.02, srv_miss_count: 100, srv_miss_mean_ms: 0.9 },
      redis: { srv_l2_hit_count: 900, srv_l2_hit_mean_ms: 0.3, srv_miss_count: 100, srv_miss_mean_ms: 1.2 },
      two_tier: {},
    };
    // local's p50 above redis's: the client-p50 path refuses ("not ordered"), the server-side one does not.
    const rows: ResultRow[] = cardRows().map((r) => ({
      ...r,
      ...srv[String(r.strategy)],
      srv_mean_ms: 0.5,
      latency_p50_ms: r.strategy === "local" ? 2.5 : (r.latency_p50_ms ?? null),
    }));
    const [card] = buildCards(summarize(rows));
    expect(card?.breakEvens[0]).toBe("from server-side means (srv_*_mean_ms)");
    // E = 0.28, D = 0.98, h = 0.9: E* = 0.9 × 0.98 ÷ 1.1 = 0.80.
    expect(card?.breakEvens[1]).toContain(
      "E* = h × (t_miss − t_L1) ÷ (2 − h) = 0.900 × (1.00 ms − 0.02 ms) ÷ (2 − 0.900) = 0.80 ms; here E = t_Rhit − t_L1 = 0.30 ms − 0.02 ms = 0.28 ms: below",
    );
    // Without srv_* the same rows fall back to the p50s, and say why nothing is computed.
    const old = rows.map((r) => ({
      ...r,
      srv_l1_hit_mean_ms: null,
      srv_l1_hit_count: null,
      srv_mean_ms: null,
    }));
    expect(buildCards(summarize(old))[0]?.breakEvens[0]).toStartWith(
      "not computed: server-side: no server-side L1 hit cost: local's no srv_l1_hit_count in the rows; client p50s: the p50s are not ordered",
    );
    // none without a srv_miss cost: the miss is t_L1 + its db_load_ms_mean.
    const loadOnly = rows.map((r) =>
      r.strategy === "none" ? { ...r, srv_miss_count: 0, db_load_ms_mean: 0.7 } : r,
    );
    expect(buildCards(summarize(loadOnly))[0]?.breakEvens[0]).toBe(
      "from server-side means (srv_*_mean_ms; the miss as t_L1 + none's db_load_ms_mean)",
    );
  });

  test("predicted against measured: the error per strategy, flagged past 25%, with its source and the p99 caveat", () => {
    const predicted: Record<string, [number, number]> = {
      none: [1.0, 1.1],
      local: [0.2, 0.21],
      redis: [0.4, 0.55],
      two_tier: [0.25, 0.24],
    };
    const rows = cardRows().map((r) => {
      const [p, m] = predicted[String(r.strategy)] as [number, number];
      return {
        ...r,
        predicted_mean_ms: p,
        srv_mean_ms: m,
        predicted_from: "zipf_reads_base of run R1 (3 valid repeats)",
      };
    });
    const [card] = buildCards(summarize(rows));
    expect(card?.model).toEqual([
      "none: mean predicted 1.000 ms, measured 1.100 ms, error +10%; p99 not predicted (base rows without srv_*_hist)",
      "local: mean predicted 0.200 ms, measured 0.210 ms, error +5%; p99 not predicted (base rows without srv_*_hist)",
      "redis: mean predicted 0.400 ms, measured 0.550 ms, error +38% — OFF: more than 25% from the model; p99 not predicted (base rows without srv_*_hist)",
      "two_tier: mean predicted 0.250 ms, measured 0.240 ms, error −4%; p99 not predicted (base rows without srv_*_hist)",
      "ranking by mean: predicted local < two_tier < redis < none, measured local < two_tier < redis < none: the same",
      "rows within 25% of their prediction: 9 of 12",
      "predicted from: zipf_reads_base of run R1 (3 valid repeats)",
    ]);
    const text = cardMarkdown(card as NonNullable<typeof card>).join("\n");
    expect(text).toContain("Predicted against measured, server-side mean");
    expect(cardHtml(card as NonNullable<typeof card>)).toContain("error +38% — OFF");
  });

  test("predicted against measured: a ranking the rows do not keep is DIFFERENT", () => {
    const means: Record<string, [number, number]> = {
      none: [1.0, 1.0],
      local: [0.2, 0.3],
      redis: [0.4, 0.42],
      two_tier: [0.25, 0.24],
    };
    const rows = cardRows().map((r) => {
      const [p, m] = means[String(r.strategy)] as [number, number];
      return { ...r, predicted_mean_ms: p, srv_mean_ms: m, predicted_from: "base" };
    });
    const [card] = buildCards(summarize(rows));
    expect(card?.model).toContain(
      "ranking by mean: predicted local < two_tier < redis < none, measured two_tier < local < redis < none: DIFFERENT",
    );
    expect(card?.model).toContain("rows within 25% of their prediction: 9 of 12");
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

test("a strategy whose rows got no predicted p99 says their own reason", () => {
  const rows = cardRows().map((r) => ({
    ...r,
    predicted_mean_ms: 1,
    srv_mean_ms: 1,
    predicted_from: "base",
    predicted_reason:
      r.strategy === "redis" ? "outside the model: the p99 falls on a step of the distribution" : null,
  }));
  const [card] = buildCards(summarize(rows));
  expect(card?.model.find((line) => line.startsWith("redis:"))).toEndWith(
    "; p99 not predicted (outside the model: the p99 falls on a step of the distribution)",
  );
  expect(card?.model.find((line) => line.startsWith("none:"))).toEndWith(
    "; p99 not predicted (base rows without srv_*_hist)",
  );
});

test("a measured p99 more than 35% from its prediction is flagged OFF; within it, not", () => {
  // Every request at 2 ms: the rows' own p99 reads 2 ms (to its bucket, within 5%).
  const cell = encodeHistogram([[bucketOf(2), 1_000]]);
  const rows = cardRows().map((r) => ({
    ...r,
    predicted_mean_ms: 2,
    srv_mean_ms: 2,
    predicted_from: "base",
    srv_miss_hist: cell,
    predicted_p99_ms: r.strategy === "redis" ? 1.4 : 1.9,
  }));
  const [card] = buildCards(summarize(rows));
  const line = (s: string) => card?.model.find((l) => l.startsWith(`${s}:`)) ?? "";
  expect(line("redis")).toContain("p99 predicted 1.40 ms");
  expect(line("redis")).toEndWith("— OFF: more than 35% from the model");
  expect(line("none")).toContain("p99 predicted 1.90 ms");
  expect(line("none")).not.toContain("OFF");
});
