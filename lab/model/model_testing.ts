/**
 * The model tests' rows, built by hand: constructed for the tests, not measurements. Tier costs are of the
 * order this machine shows server-side (an in-process hit ~0.015 ms, a Redis hit ~0.2 ms, a miss ~0.8 ms).
 */
import { bucketOf } from "../../server/load_timer.ts";
import { encodeHistogram } from "./histogram.ts";
import type { Row } from "./tier_costs.ts";

/** Per strategy: counts and means per outcome for 10 000 reads at hit ratio 0.8 (two_tier: L1 0.7). */
const OUTCOMES_BY_STRATEGY: Record<string, Record<string, [number, number]>> = {
  none: { miss: [10_000, 0.8] },
  local: { l1_hit: [8_000, 0.015], miss: [2_000, 0.8] },
  redis: { l2_hit: [8_000, 0.2], miss: [2_000, 1.0] },
  two_tier: { l1_hit: [7_000, 0.02], l2_hit: [1_000, 0.25], miss: [2_000, 1.05] },
};

/** One valid row of `strategy` with its srv_* columns (count-weighted srv_mean_ms), then `overrides`. */
export function srvRow(strategy: string, overrides: Row = {}): Row {
  const outcomes = OUTCOMES_BY_STRATEGY[strategy] ?? {};
  const row: Row = {
    run_id: "20261202T000000-test",
    experiment: "quickstart",
    attack: "zipf_reads_base",
    strategy,
    repeat: 1,
    valid: true,
    offered_rps: 2000,
    request_mix: "detail:1:GET /products/{id}",
    miss_cost_ms: 0,
    redis_rtt_ms: 0,
    hit_ratio: strategy === "none" ? 0 : 0.8,
    hit_ratio_expected: strategy === "none" ? 0 : 0.8,
    l1_hit_ratio_expected: strategy === "local" ? 0.8 : strategy === "two_tier" ? 0.7 : null,
    db_load_ms_mean: 0.7,
    redis_cmd_mean_ms: strategy === "redis" || strategy === "two_tier" ? 0.12 : null,
    redis_bytes_per_entry: strategy === "redis" || strategy === "two_tier" ? 350 : null,
    redis_entries: strategy === "redis" || strategy === "two_tier" ? 9000 : null,
    cache_ttl_ms: strategy === "none" ? null : 60_000,
    l1_ttl_ms: strategy === "two_tier" ? 5_000 : null,
    l1_max_entries: strategy === "local" || strategy === "two_tier" ? 10_000 : null,
  };
  let count = 0;
  let total = 0;
  for (const [outcome, [n, meanMs]] of Object.entries(outcomes)) {
    row[`srv_${outcome}_count`] = n;
    row[`srv_${outcome}_mean_ms`] = meanMs;
    count += n;
    total += n * meanMs;
  }
  row.srv_write_count = 0;
  row.srv_mean_ms = total / count;
  return { ...row, ...overrides };
}

/** The four strategies' base rows, `repeats` each, then `overrides`. */
export function baseRows(repeats = 1, overrides: Row = {}): Row[] {
  return ["none", "local", "redis", "two_tier"].flatMap((strategy) =>
    Array.from({ length: repeats }, (_, i) => srvRow(strategy, { repeat: i + 1, ...overrides })),
  );
}

/**
 * A constructed histogram cell of `count` requests around `meanMs`: 98% spread evenly over 0.5–1.5 × the
 * mean, 2% at 6 × the mean (a tail for the p99 to find).
 */
export function histCell(count: number, meanMs: number): string {
  const buckets = new Map<number, number>();
  const body = Math.round(count * 0.98);
  const add = (ms: number, n: number) => {
    const b = bucketOf(ms);
    buckets.set(b, (buckets.get(b) ?? 0) + n);
  };
  for (let i = 0; i < body; i++) add(meanMs * (0.5 + (i + 0.5) / body), 1);
  add(meanMs * 6, count - body);
  return encodeHistogram([...buckets]);
}

/** A row with a histogram per outcome it has (histCell of its count and mean), and CPU figures. */
export function withHists(
  row: Row,
  cpu: [server: number, postgres: number, redis: number] = [1, 0.5, 0],
): Row {
  const out: Row = {
    ...row,
    completed: 10_000,
    server_cpu_s: cpu[0],
    postgres_cpu_s: cpu[1],
    redis_cpu_s: cpu[2],
  };
  for (const outcome of ["l1_hit", "l2_hit", "miss", "write"]) {
    const n = Number(row[`srv_${outcome}_count`] ?? 0);
    const mean = Number(row[`srv_${outcome}_mean_ms`] ?? 0);
    out[`srv_${outcome}_hist`] = n > 0 ? histCell(n, mean) : "";
  }
  return out;
}
