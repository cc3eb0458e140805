/**
 * The decision card, one per workload (experiment · attack · tool, as summary.ts groups rows): the
 * strategies ranked with intervals from the repeats, a line per strategy against none, the pick with its
 * conditions and the break-evens, assembled from card_rules.ts and card_breakeven.ts and rendered as
 * Markdown or HTML. How to read it: docs/card.md.
 */
import {
  addedRttMs,
  breakEvens,
  checkSibling,
  type SiblingShift,
  serverTierCosts,
  type TierCosts,
  tierCosts,
} from "./card_breakeven.ts";
import { modelLines } from "./card_model.ts";
import { policyLine } from "./card_policy.ts";
import { decisive, type Figures, type RunContext, rank, recommend, tradeLine } from "./card_rules.ts";
import type { CurveRow } from "./curves_csv.ts";
import { median, medianInterval } from "./intervals.ts";
import { groupCurves, isTraceGroup } from "./report_trace.ts";
import { errorRatio, type GroupSummary, type ResultRow } from "./summary.ts";

export const CARD_METHOD =
  "Intervals: the order-statistic (distribution-free) interval of the median over the repeats, one value per repeat; with fewer than 6 repeats it is [min, max], at its own confidence 1 − 2·0.5^n (75% at 3), shown as such; fewer than 3 repeats: no interval. `<` disjoint intervals, `~` overlapping (not distinguishable), `?` no confidence. Other figures: medians across repeats.";

/** A number from a typed or untyped cell (summary.ts leaves some numeric columns as text); null stays null. */
function numeric(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value)))
    return Number(value);
  return null;
}

function medianOf(rows: ResultRow[], pick: (row: ResultRow) => number | null): number | null {
  return median(rows.map(pick).filter((value): value is number => value !== null));
}

/** A strategy's figures from its valid rows in the group. */
export function figuresOf(strategy: string, rows: ResultRow[]): Figures {
  const valid = rows.filter((row) => row.strategy === strategy && row.valid === true);
  const column = (name: string) => (row: ResultRow) => numeric(row[name]);
  const samples = (name: string) =>
    valid.map(column(name)).filter((value): value is number => value !== null);
  return {
    strategy,
    repeats: valid.length,
    p50Ms: samples("latency_p50_ms"),
    p99Ms: samples("latency_p99_ms"),
    rps: samples("achieved_rps"),
    meanMs: medianOf(valid, column("latency_mean_ms")),
    hitRatio: medianOf(valid, column("hit_ratio")),
    hitRatioExpected: medianOf(valid, column("hit_ratio_expected")),
    hitRatioOptimal: medianOf(valid, column("hit_ratio_optimal")),
    l1HitRatio: medianOf(valid, column("l1_hit_ratio")),
    l2HitRatio: medianOf(valid, column("l2_hit_ratio")),
    dbQueriesPerS: medianOf(valid, (row) => {
      const queries = numeric(row.db_queries);
      const durationS = numeric(row.duration_s);
      return queries !== null && durationS !== null && durationS > 0 ? queries / durationS : null;
    }),
    errorRatio: medianOf(valid, errorRatio),
    shed: medianOf(valid, column("shed")),
    shedEventLoop: medianOf(valid, column("shed_event_loop")),
    cpuMsPer1kRequests: medianOf(valid, (row) => {
      const cpuS = numeric(row.server_cpu_s);
      const requests = numeric(row.server_requests);
      return cpuS !== null && requests !== null && requests > 0 ? (cpuS * 1e6) / requests : null;
    }),
    servicesCpuMsPer1kRequests: medianOf(valid, (row) => {
      const postgres = numeric(row.postgres_cpu_s);
      const redis = numeric(row.redis_cpu_s);
      const requests = numeric(row.server_requests);
      // Postgres's CPU is read from /proc: empty when it runs elsewhere, and then so is the sum.
      if (postgres === null || requests === null || requests <= 0) return null;
      return ((postgres + (redis ?? 0)) * 1e6) / requests;
    }),
    rssPeakMb: medianOf(valid, column("server_rss_peak_mb")),
    redisEntries: medianOf(valid, column("redis_entries")),
    redisBytesPerEntry: medianOf(valid, column("redis_bytes_per_entry")),
    stalenessP99Ms: medianOf(valid, column("staleness_p99_ms")),
    missCostMs: medianOf(valid, column("db_load_ms_p50")),
  };
}

const WRITE = /:(PUT|POST|PATCH|DELETE) /;

function contextOf(group: GroupSummary): RunContext {
  const first = group.rows[0];
  return {
    closed: group.loadModel === "closed",
    instances: numeric(first?.instances),
    writes: group.rows.some(
      (row) => WRITE.test(String(row.request_mix ?? "")) || (numeric(row.stale_checks) ?? 0) > 0,
    ),
    // none has no TTL; the staleness rule speaks of local's copies.
    cacheTtlMs: numeric(group.rows.find((row) => row.strategy === "local")?.cache_ttl_ms),
  };
}

const SIBLING_KEY = ["experiment", "tool", "load_model", "offered_rps", "connections"];

/** Other workloads of the run with the same load that move the round trip or the miss cost on purpose. */
function siblings(group: GroupSummary, all: GroupSummary[]): GroupSummary[] {
  const first = group.rows[0] as ResultRow;
  const moved = ["redis_path", "postgres_path", "request_mix", "reviews_per_product"];
  return all.filter((other) => {
    const theirs = other.rows[0] as ResultRow;
    return (
      other !== group &&
      SIBLING_KEY.every((key) => theirs[key] === first[key]) &&
      moved.some((key) => theirs[key] !== first[key])
    );
  });
}

function shift(group: GroupSummary, sibling: GroupSummary): SiblingShift | string {
  const mine = group.rows[0] as ResultRow;
  const theirs = sibling.rows[0] as ResultRow;
  const redisHere = addedRttMs(mine.redis_path === null ? null : String(mine.redis_path));
  const redisThere = addedRttMs(theirs.redis_path === null ? null : String(theirs.redis_path));
  const loadHere = figuresOf("none", group.rows).missCostMs;
  const loadThere = figuresOf("none", sibling.rows).missCostMs;
  if (redisHere === null || redisThere === null)
    return `${sibling.attack}: not checked, redis_path not understood`;
  if (loadHere === null || loadThere === null)
    return `${sibling.attack}: not checked, no db_load_ms_p50 of none`;
  return {
    name: sibling.attack,
    addedRedisRttMs: redisThere - redisHere,
    // The server times a load from the query sent to its rows back: a longer path to Postgres is in it.
    addedLoadMs: loadThere - loadHere,
    redisMeanMs: figuresOf("redis", sibling.rows).meanMs,
    noneMeanMs: figuresOf("none", sibling.rows).meanMs,
  };
}

export interface Card {
  title: string;
  /** The pick with its ties and confidence; null when the card makes none (`noPick` says why). */
  pick: string | null;
  /** Why there is no pick ("no confidence: 1 repeat — …"), or null when there is one. */
  noPick: string | null;
  conditions: string[];
  /** What the order is on: "p99 (then p50)", or throughput in the closed model. */
  basis: string;
  order: string;
  table: { head: string[]; rows: string[][] };
  trades: string[];
  breakEvens: string[];
  checks: string[];
  /** Predicted against measured server-side means (lab/model), when the rows carry both. */
  model: string[];
  /** A trace group's eviction-policy line from its replayed curves (card_policy.ts); null otherwise. */
  policy: string | null;
}

function fixed(value: number | null, digits: number): string {
  return value === null ? "—" : value.toFixed(digits);
}

function percent(share: number): string {
  const value = share * 100;
  return `${Number.isInteger(value) ? value : value.toFixed(2)}%`;
}

function intervalCell(samples: number[], digits = 2): string {
  const interval = medianInterval(samples);
  if (interval === null) return `${fixed(median(samples), digits)} (no interval, n=${samples.length})`;
  return `${interval.median.toFixed(digits)} [${interval.low.toFixed(digits)}–${interval.high.toFixed(digits)}, ${percent(interval.confidence)}]`;
}

function tableRow(f: Figures, position: number, invalid: number): string[] {
  const hit = `${fixed(f.hitRatio, 3)} (${fixed(f.hitRatioExpected, 3)} / ${fixed(f.hitRatioOptimal, 3)})`;
  const tiers =
    f.l1HitRatio === null && f.l2HitRatio === null
      ? "—"
      : `${fixed(f.l1HitRatio, 3)} / ${fixed(f.l2HitRatio, 3)}`;
  const errors = `${f.errorRatio === null ? "—" : `${(f.errorRatio * 100).toFixed(2)}%`} / ${fixed(f.shed, 0)}`;
  return [
    String(position),
    f.strategy,
    invalid > 0 ? `${f.repeats} (+${invalid} invalid)` : String(f.repeats),
    intervalCell(f.rps, 0),
    intervalCell(f.p50Ms),
    intervalCell(f.p99Ms),
    fixed(f.dbQueriesPerS, 0),
    hit,
    tiers,
    errors,
    f.servicesCpuMsPer1kRequests == null
      ? fixed(f.cpuMsPer1kRequests, 0)
      : `${fixed(f.cpuMsPer1kRequests, 0)} + ${fixed(f.servicesCpuMsPer1kRequests, 0)}`,
    fixed(f.rssPeakMb, 0),
    fixed(f.redisBytesPerEntry, 0),
    fixed(f.stalenessP99Ms, 1),
  ];
}

const HEAD = [
  "#",
  "strategy",
  "valid repeats",
  "rps [interval, confidence]",
  "p50 ms [interval, confidence]",
  "p99 ms [interval, confidence]",
  "DB q/s",
  "hit (sim / opt)",
  "L1 / L2 hit",
  "errors / shed",
  "CPU ms / 1k req (server + Postgres, Redis)",
  "RSS MB",
  "Redis B / entry",
  "staleness p99 ms",
];

/**
 * The card of one group; `all` holds the report's other groups, where the break-evens are checked, and
 * `curves` the replayed curves a trace group's policy line reads.
 */
export function buildCard(group: GroupSummary, all: GroupSummary[], curves: CurveRow[] = []): Card {
  const figures = group.strategies.map((s) => figuresOf(s.strategy, group.rows)).filter((f) => f.repeats > 0);
  const context = contextOf(group);
  const ranked = rank(figures, context.closed);
  const base = figures.find((f) => f.strategy === "none") ?? null;
  const advice = recommend(figures, context);
  const on = decisive(context.closed);
  const tied =
    advice.tied.length > 0 ? ` (~ ${advice.tied.join(", ")}: not distinguishable on ${on.name})` : "";
  const picked = figures.find((f) => f.strategy === advice.pick);
  const pickInterval = medianInterval(picked === undefined ? [] : on.samples(picked));
  const at =
    pickInterval === null ? "" : ` — ${on.name} intervals at ${percent(pickInterval.confidence)} confidence`;
  const confidence = `${at}${advice.noConfidence === null ? "" : ` — ${advice.noConfidence}`}`;
  const excluded =
    advice.excluded.length > 0 ? `; not recommended, errors or shed: ${advice.excluded.join(", ")}` : "";
  // The best as measured with fewer than 3 repeats has no interval: the card ranks it but picks nothing.
  const unpicked = advice.pick === null && advice.noConfidence !== null;
  const pick =
    advice.pick === null ? "no strategy without errors to recommend" : `${advice.pick}${tied}${confidence}`;
  // A strategy whose every row is invalid is not ranked, but the card says so rather than drop it silently.
  const unranked = group.strategies.filter((s) => s.valid === 0).map((s) => s.strategy);
  const missing =
    unranked.length > 0 ? `; no valid rows, not ranked: ${unranked.join(", ")} (see the invalid rows)` : "";
  // Server-side costs exist whenever the tiers do; the client p50s are the fallback for older rows.
  const server = serverTierCosts(group.rows, figures);
  const costs = typeof server === "string" ? tierCosts(figures) : server;
  const checks: string[] = [];
  let evens: string[];
  if (typeof costs === "string") {
    evens = [
      typeof server === "string" && server !== costs
        ? `not computed: server-side: ${server}; client p50s: ${costs}`
        : `not computed: ${costs}`,
    ];
  } else {
    evens = [
      `from ${costs.source}`,
      ...breakEvens(costs).map((b) => `${b.name}: ${b.formula} = ${b.valueMs.toFixed(2)} ms; ${b.verdict}`),
    ];
    checks.push(...siblingChecks(group, all, costs));
    // At saturation every client latency carries the queue's wait: the tiers' costs are not what they cost alone.
    if (group.loadModel === "closed" && typeof server === "string") {
      evens.push(
        "closed model: latencies include queueing at saturation, so these tier costs are upper bounds",
      );
    }
  }
  return {
    title: `${group.experiment} · ${group.attack} · ${group.tool}`,
    pick: unpicked ? null : `${pick}${excluded}${missing}`,
    noPick: unpicked
      ? `${advice.noConfidence} — no pick; the ranking below is as measured (3 repeats per strategy give intervals: --repeats 3)${excluded}${missing}`
      : null,
    conditions: advice.conditions,
    basis: context.closed
      ? `throughput (then p99; closed model, ${group.connections ?? "fixed"} connections: a faster strategy queues more requests, so its p99 can be the higher)`
      : "p99 (then p50)",
    order: ranked.map((r) => `${r.figures.strategy}${r.next === null ? "" : ` ${r.next} `}`).join(""),
    table: {
      head: HEAD,
      rows: ranked.map((r, i) =>
        tableRow(
          r.figures,
          i + 1,
          group.strategies.find((s) => s.strategy === r.figures.strategy)?.invalid ?? 0,
        ),
      ),
    },
    trades: figures.map((f) => tradeLine(f, base, context)),
    breakEvens: evens,
    checks,
    model: modelLines(
      group.rows,
      figures.map((f) => f.strategy),
    ),
    policy: isTraceGroup(group) ? policyLine(groupCurves(group, curves)) : null,
  };
}

function siblingChecks(group: GroupSummary, all: GroupSummary[], costs: TierCosts): string[] {
  const mine = siblings(group, all);
  if (mine.length === 0) {
    return [
      "not checked: no network_rtt or miss_cost rows (no workload of this run with the same load moves the round trip or the miss cost)",
    ];
  }
  return mine.map((sibling) => {
    const moved = shift(group, sibling);
    return typeof moved === "string" ? moved : checkSibling(costs, moved);
  });
}

/** Every group's card. */
export function buildCards(groups: GroupSummary[], curves: CurveRow[] = []): Card[] {
  return groups.map((group) => buildCard(group, groups, curves));
}

function markdownTable(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(" | ")} |`,
    `|${" --- |".repeat(head.length)}`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
}

/** The card as Markdown, the first thing of a report. */
export function cardMarkdown(card: Card): string[] {
  return [
    `### Decision card: ${card.title}`,
    "",
    card.pick === null ? String(card.noPick) : `**Pick: ${card.pick}**`,
    ...card.conditions.map((line) => `- ${line}`),
    "",
    `Ranked on ${card.basis}: ${card.order}`,
    "",
    ...markdownTable(card.table.head, card.table.rows),
    "",
    "What each buys and costs here, against none:",
    ...card.trades.map((line) => `- ${line}`),
    ...(card.policy === null ? [] : [`- ${card.policy}`]),
    "",
    "Break-evens (mean-latency model from this run's tier costs, see docs/card.md):",
    ...card.breakEvens.map((line) => `- ${line}`),
    ...card.checks.map((line) => `- check: ${line}`),
    "",
    ...(card.model.length === 0
      ? []
      : [
          "Predicted against measured, server-side mean (lab/model from base cells, see docs/card.md):",
          ...card.model.map((line) => `- ${line}`),
          "",
        ]),
    `_${CARD_METHOD}_`,
    "",
  ];
}

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

function list(lines: string[]): string {
  return lines.length === 0 ? "" : `<ul>${lines.map((line) => `<li>${escapeHtml(line)}</li>`).join("")}</ul>`;
}

/** The card as an HTML section, the first thing of the page. */
export function cardHtml(card: Card): string {
  const head = card.table.head.map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const body = card.table.rows
    .map((cells) => `<tr>${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`)
    .join("");
  return `<section class="card"><h3>Decision card: ${escapeHtml(card.title)}</h3>
<p>${card.pick === null ? escapeHtml(String(card.noPick)) : `<strong>Pick: ${escapeHtml(card.pick)}</strong>`}</p>${list(card.conditions)}
<p>Ranked on ${escapeHtml(card.basis)}: ${escapeHtml(card.order)}</p>
<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>
<p>What each buys and costs here, against none:</p>${list(card.policy === null ? card.trades : [...card.trades, card.policy])}
<p>Break-evens (mean-latency model from this run's tier costs, see docs/card.md):</p>${list([...card.breakEvens, ...card.checks.map((line) => `check: ${line}`)])}${card.model.length === 0 ? "" : `<p>Predicted against measured, server-side mean (lab/model from base cells, see docs/card.md):</p>${list(card.model)}`}
<p class="note">${escapeHtml(CARD_METHOD)}</p></section>`;
}
