/**
 * The trace card's eviction-policy line: on the segment a trace run replayed, what the best of the policy
 * curves (SIEVE, S3-FIFO, W-TinyLFU, ARC) would change in misses against quick-lru (the `local` curve) at
 * local's configured size (the capacity its curves mark configured, l1_max_entries).
 */
import { POLICY_LABELS, POLICY_NAMES, type PolicyName } from "../sim/policies/policies.ts";
import type { CurveRow } from "./curves_csv.ts";
import type { GroupCurves } from "./report_trace.ts";

/** The line, or null when the group has no curves; a reason instead when they cannot give it. */
export function policyLine(curves: GroupCurves | null): string | null {
  if (curves === null) return null;
  const configured = curves.configuredEntries;
  const prefix = "eviction policy on this trace";
  if (configured === null)
    return `${prefix}: not computed: no capacity of the curves is local's configured one`;
  const at = (method: string) =>
    curves.rows.find((row) => row.method === method && row.capacity_entries === configured);
  const local = at("local");
  const policies = POLICY_NAMES.map((name) => [name, at(name)] as const).filter(
    (pair): pair is readonly [PolicyName, CurveRow] => pair[1] !== undefined,
  );
  if (local === undefined || policies.length === 0) {
    return `${prefix}: not computed: this run's curves have no ${local === undefined ? "local" : "policy"} curve at ${configured.toLocaleString("en-US")} entries (written before the policies were added)`;
  }
  // The fewest misses wins; on a tie the first in POLICY_NAMES' order.
  const [name, best] = policies.reduce((a, b) => (b[1].hit_ratio > a[1].hit_ratio ? b : a));
  const localMiss = 1 - local.hit_ratio;
  const bestMiss = 1 - best.hit_ratio;
  const entries = `${POLICY_LABELS[name]} at ${configured.toLocaleString("en-US")} entries`;
  const ratios = `miss ratio ${localMiss.toFixed(3)} → ${bestMiss.toFixed(3)}`;
  if (localMiss === 0) return `${prefix}: ${entries}: no misses to change against quick-lru (${ratios})`;
  const change = Math.round(((bestMiss - localMiss) / localMiss) * 100);
  const signed = change === 0 ? "±0%" : change < 0 ? `−${-change}%` : `+${change}%`;
  return `${prefix}: ${entries}: ${signed} misses against quick-lru (${ratios}; best of ${policies.map(([p]) => POLICY_LABELS[p]).join(", ")} on the replayed curves)`;
}
