import { describe, expect, test } from "bun:test";
import { policyLine } from "./card_policy.ts";
import type { CurveRow } from "./curves_csv.ts";
import { traceCurves } from "./report_testing.ts";
import type { GroupCurves } from "./report_trace.ts";

/** GroupCurves over `rows`, with the configured capacity read off them as groupCurves does. */
function group(rows: CurveRow[]): GroupCurves {
  return {
    runId: "r",
    runs: 1,
    rows,
    reads: 14_321,
    warmupRequests: 5_000,
    fromPosition: 5_066,
    toPosition: 20_066,
    configuredEntries: rows.find((c) => c.configured)?.capacity_entries ?? null,
    workingSetEntries: 1_500,
  };
}

/** traceCurves with the policies, the configured capacity's hit ratios replaced. */
function at150(hits: Partial<Record<CurveRow["method"], number>>): CurveRow[] {
  return traceCurves({ policies: true }).map((c) =>
    c.configured && hits[c.method] !== undefined ? { ...c, hit_ratio: hits[c.method] as number } : c,
  );
}

describe("the card's eviction-policy line", () => {
  test("names the policy with the fewest misses at the configured size and the change against quick-lru", () => {
    const line = policyLine(group(at150({ local: 0.6, wtinylfu: 0.7 })));
    expect(line).toBe(
      "eviction policy on this trace: W-TinyLFU at 150 entries: −25% misses against quick-lru (miss ratio 0.400 → 0.300; best of SIEVE, S3-FIFO, W-TinyLFU, ARC on the replayed curves)",
    );
  });

  test("says so when even the best policy misses more than quick-lru", () => {
    const line = policyLine(
      group(at150({ local: 0.5, sieve: 0.45, s3fifo: 0.45, wtinylfu: 0.4, arc: 0.3 })),
    ) as string;
    // A tie goes to the first in order (SIEVE before S3-FIFO); 0.55 against 0.5 misses is +10%.
    expect(line).toContain("SIEVE at 150 entries: +10% misses against quick-lru (miss ratio 0.500 → 0.550;");
  });

  test("±0% for an equal miss ratio; no percentage when quick-lru misses nothing", () => {
    expect(policyLine(group(at150({ local: 0.45 })))).toContain("S3-FIFO at 150 entries: ±0% misses");
    expect(policyLine(group(at150({ local: 1, sieve: 1, s3fifo: 1, wtinylfu: 1, arc: 1 })))).toContain(
      "SIEVE at 150 entries: no misses to change against quick-lru (miss ratio 0.000 → 0.000)",
    );
  });

  test("no curves: no line; no configured capacity or no policy curves: the reason", () => {
    expect(policyLine(null)).toBeNull();
    const unmarked = traceCurves({ policies: true }).map((c) => ({ ...c, configured: false }));
    expect(policyLine(group(unmarked))).toBe(
      "eviction policy on this trace: not computed: no capacity of the curves is local's configured one",
    );
    expect(policyLine(group(traceCurves()))).toContain("have no policy curve at 150 entries");
    const noLocal = traceCurves({ policies: true }).filter((c) => c.method !== "local");
    expect(policyLine(group(noLocal))).toContain("have no local curve at 150 entries");
  });
});
