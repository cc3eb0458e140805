/**
 * What a trace row says of its trace: the order it was sent in and the statistics a cache operator reads
 * first (all of them: `bun run trace stats FILE`). Null on a row without a trace.
 */
import type { AttackPlan } from "../plan/attack_plan.ts";
import { heldTrace } from "./loaded.ts";
import { type TraceStats, traceStats } from "./stats.ts";
import type { CompactTrace } from "./trace.ts";
import { traceOrder } from "./trace_plan.ts";

const statsOf = new WeakMap<CompactTrace, TraceStats>();

/** The trace's statistics, computed once per trace however many rows carry them. */
function heldTraceStats(trace: CompactTrace): TraceStats {
  let stats = statsOf.get(trace);
  if (stats === undefined) {
    stats = traceStats(trace);
    statsOf.set(trace, stats);
  }
  return stats;
}

/** The trace columns of a row (all null without a trace); `sends`: how the tool walked its list. */
export function traceColumns(plan: AttackPlan, sends: "prefix" | "stripes" | "sampled") {
  const keys = plan.keys.distribution;
  const trace = keys.kind === "trace" ? heldTrace(keys) : null;
  const stats = trace ? heldTraceStats(trace) : null;
  return {
    trace_order: traceOrder(plan, sends),
    // Lines that were not requests: a route that did not match, or bad lines under --skip-bad-lines.
    trace_skipped_lines: trace ? trace.skips.unmatched + trace.skips.badLines : null,
    trace_requests: stats?.requests ?? null,
    trace_keys: stats?.distinctKeys ?? null,
    trace_write_share: stats ? stats.writeShare + stats.deleteShare : null,
    trace_one_hit_wonder_ratio: stats?.oneHitWonderRatio ?? null,
    trace_compulsory_miss_ratio: stats?.compulsoryMissRatio ?? null,
    trace_zipf_alpha: stats?.zipfAlpha ?? null,
    trace_working_set_bytes: stats?.workingSetBytes ?? null,
    trace_value_p50_bytes: stats?.valueSizeP50Bytes ?? null,
    trace_value_p99_bytes: stats?.valueSizeP99Bytes ?? null,
    trace_reuse_distance_median: stats?.reuseDistanceMedian ?? null,
  };
}
