/**
 * One measured run's seconds as timeline rows: the tool's per-request account (by the second each request
 * started), the server's counters polled at each whole second, and the faults in force, joined on the Unix
 * second.
 */

import { readHitRatio, type ServerStatsSnapshot } from "../cell/counters.ts";
import { type StatsSample, tierOf } from "../cell/poll.ts";
import type { FaultWindow } from "../faults/network.ts";
import type { Timeline } from "../plan/attack_plan.ts";
import type { TimelineRow } from "./timeline.ts";

export interface TimelineInput {
  base: Pick<TimelineRow, "run_id" | "experiment" | "strategy" | "tool" | "attack" | "repeat">;
  /** When the measured run's tool was started (Unix ms): second 0. */
  startEpochMs: number;
  tool: Timeline | null;
  /** What to say when the tool gives no per-second account. */
  noToolSource: string;
  samples: StatsSample[];
  windows: FaultWindow[];
}

type ServerDelta = Pick<
  TimelineRow,
  | "server_requests"
  | "server_reads"
  | "l1_hits"
  | "l1_misses"
  | "l2_hits"
  | "l2_misses"
  | "db_queries"
  | "hit_ratio"
  | "cache_errors"
>;

const NO_SERVER: ServerDelta = {
  server_requests: null,
  server_reads: null,
  l1_hits: null,
  l1_misses: null,
  l2_hits: null,
  l2_misses: null,
  db_queries: null,
  hit_ratio: null,
  cache_errors: null,
};

function delta(a: ServerStatsSnapshot, b: ServerStatsSnapshot): ServerDelta {
  const tier = (name: "l1" | "l2", field: "hits" | "misses") => {
    const before = tierOf(a, name);
    const after = tierOf(b, name);
    return before && after ? after[field] - before[field] : null;
  };
  return {
    server_requests: b.requests - a.requests,
    server_reads: b.reads - a.reads,
    l1_hits: tier("l1", "hits"),
    l1_misses: tier("l1", "misses"),
    l2_hits: tier("l2", "hits"),
    l2_misses: tier("l2", "misses"),
    db_queries: b.dbQueries - a.dbQueries,
    // As the row's hit_ratio: reads answered without a database query (the tiers' own counters say which
    // tier answered; this says whether the database was spared).
    hit_ratio: round4(readHitRatio(a, b)),
    cache_errors: b.cacheErrors - a.cacheErrors,
  };
}

function round4(value: number | null): number | null {
  return value === null ? null : Math.round(value * 1e4) / 1e4;
}

/**
 * Per Unix second: the counters' deltas between consecutive polls, each given to the second the earlier poll
 * lies in (polls run at each whole second, so that is the second the delta covers; the last poll, when the
 * tool exits, can fall in the same second as the one before it). Polls further apart (one failed) cover
 * seconds that cannot be told apart: those stay null, never 0.
 */
function serverSeconds(samples: StatsSample[]): Map<number, ServerDelta> {
  const seconds = new Map<number, ServerDelta>();
  // The first poll of each second: a second's delta runs from it to the latest poll counted for that second.
  const starts = new Map<number, StatsSample>();
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as StatsSample;
    const b = samples[i] as StatsSample;
    const second = Math.floor(a.epochMs / 1_000);
    if (Math.floor(b.epochMs / 1_000) - second > 1) continue;
    const start = starts.get(second) ?? a;
    starts.set(second, start);
    seconds.set(second, delta(start.stats, b.stats));
  }
  return seconds;
}

export function timelineRows(input: TimelineInput): TimelineRow[] {
  const first = Math.floor(input.startEpochMs / 1_000);
  const server = serverSeconds(input.samples);
  const tool = new Map((input.tool?.seconds ?? []).map((second) => [second.epochS, second]));
  const last = Math.max(first, ...tool.keys(), ...server.keys());
  const source = input.tool?.source ?? input.noToolSource;
  const countsErrors = input.tool?.seconds.some((second) => second.errors !== null) ?? false;
  const rows: TimelineRow[] = [];
  for (let epochS = first; epochS <= last; epochS++) {
    const fromTool = tool.get(epochS);
    const startMs = epochS * 1_000;
    const faults = input.windows
      .filter((window) => {
        const end = Number.isFinite(window.endEpochMs) ? window.endEpochMs : Number.POSITIVE_INFINITY;
        return Number.isFinite(window.startEpochMs) && window.startEpochMs < startMs + 1_000 && end > startMs;
      })
      .map((window) => window.label);
    rows.push({
      ...input.base,
      second: epochS - first,
      epoch_s: epochS,
      // A second inside the tool's span with no request started in it is a real 0; outside it, no account.
      sent: input.tool === null ? null : (fromTool?.sent ?? 0),
      ok: input.tool === null ? null : (fromTool?.ok ?? 0),
      errors: fromTool ? fromTool.errors : countsErrors ? 0 : null,
      p50_ms: fromTool?.p50Ms ?? null,
      p99_ms: fromTool?.p99Ms ?? null,
      timeline_source: source,
      ...(server.get(epochS) ?? NO_SERVER),
      faults: [...new Set(faults)].join(";"),
    });
  }
  // The last poll, after the tool exits, can open a second nothing was sent in: not part of the run.
  const idle = (row: TimelineRow) => (row.sent ?? 0) === 0 && (row.server_requests ?? 0) === 0;
  while (rows.length > 1 && idle(rows.at(-1) as TimelineRow)) rows.pop();
  return rows;
}
