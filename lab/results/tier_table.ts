/**
 * What each kind of read cost inside the server: its own timing of in-process hits, Redis hits and misses
 * (the srv_* columns), without the load tool's queueing or the client's side of the socket. This is where a
 * hit's cost is compared across strategies (local's L1 against tracking's, a Redis hit against a miss).
 */
import { fmtSpread } from "./report_tables.ts";
import { type GroupSummary, num, type ResultRow, spread } from "./summary.ts";

const TIERS = [
  ["l1_hit", "in-process hits", "in-process hit"],
  ["l2_hit", "Redis hits", "Redis hit"],
  ["miss", "misses", "miss"],
  ["join", "joins", "join"],
] as const;

/**
 * A tier's share of the row's reads; null when the server reported no tier counts. Rows from before joins
 * were counted apart have no srv_join_count: their joins are in the Redis hits (redis, two_tier, tracking)
 * or the misses (local).
 */
function share(row: ResultRow, tier: string): number | null {
  const counts = TIERS.map(([name]) => num(row[`srv_${name}_count`]) ?? (name === "join" ? 0 : null));
  if (counts.some((count) => count === null)) return null;
  const reads = (counts as number[]).reduce((sum, count) => sum + count, 0);
  const mine = num(row[`srv_${tier}_count`]); // null only for an uncounted join
  return reads > 0 && mine !== null ? mine / reads : null;
}

/** "mean / p50 / p99", each the median over the valid repeats; "—" for a tier the strategy never served. */
function costs(rows: ResultRow[], tier: string): string {
  const [mean, p50, p99] = ["mean", "p50", "p99"].map((stat) =>
    spread(rows.map((row) => num(row[`srv_${tier}_${stat}_ms`]))),
  );
  if (mean === null) return "—";
  return [mean, p50, p99].map((value) => (value ? value.median.toFixed(3) : "n/a")).join(" / ");
}

/**
 * The group's tier table, or null when no valid row carries the server's tier timings (a run against an older
 * server, or rows written before the columns existed).
 */
export function tierTable(group: GroupSummary): { head: string[]; rows: string[][] } | null {
  const valid = group.rows.filter((row) => row.valid === true);
  if (!valid.some((row) => share(row, "miss") !== null)) return null;
  const head = ["strategy"];
  for (const [, plural, singular] of TIERS) head.push(plural, `${singular} ms (mean / p50 / p99)`);
  const rows = group.strategies.map((s) => {
    const mine = valid.filter((row) => row.strategy === s.strategy);
    const cells = [s.strategy];
    for (const [tier] of TIERS) {
      cells.push(fmtSpread(spread(mine.map((row) => share(row, tier))), 3), costs(mine, tier));
    }
    return cells;
  });
  return { head, rows };
}

export const TIER_NOTE =
  "tiers inside the server (its own clock, from a request's handler starting to its response being ready; one " +
  "request in TIER_TIMING timed, every request counted; neither HTTP nor the load tool is in them): the share " +
  "of reads each tier answered, median (min–max) across valid repeats, and its time as the medians of the " +
  "repeats' mean, p50 and p99. An in-process hit never leaves the process; a Redis hit is a round trip (behind " +
  "an L1, in two_tier and tracking, it waits out the L1's hits the process answers meanwhile, and reads dearer " +
  "than redis's for that alone: compare those two with each other, docs/strategies.md); a " +
  "miss waited on a database load of its own, with whatever the strategy does around it (a Redis GET before, " +
  "a fill after); a join waited on a load another request of its key had started (n/a: rows from before " +
  "joins were counted apart, whose joins are in the Redis hits, or for local the misses)";
