import { describe, expect, test } from "bun:test";
import type { ServerStatsSnapshot } from "../cell/counters.ts";
import type { StatsSample } from "../cell/poll.ts";
import type { FaultWindow } from "../faults/network.ts";
import { timelineRows } from "./timeline_rows.ts";

const BASE = { run_id: "r", experiment: "e", strategy: "redis", tool: "vegeta", attack: "a", repeat: 1 };
const T0 = 1_800_000_000_000; // a whole Unix second, in ms

function stats(requests: number, hits: number, misses: number): ServerStatsSnapshot {
  return {
    requests,
    reads: requests,
    readDbQueries: misses,
    writes: 0,
    dbQueries: misses,
    distinctKeys: 0,
    probes: 0,
    probeDbQueries: 0,
    cacheErrors: 0,
    tiers: { redis: { hits, misses } },
  } as ServerStatsSnapshot;
}

const sample = (atMs: number, requests: number, hits = 0, misses = 0): StatsSample => ({
  epochMs: T0 + atMs,
  stats: stats(requests, hits, misses),
});

describe("timelineRows", () => {
  test("each poll-to-poll delta goes to the second its first poll lies in, the last partial second included", () => {
    const rows = timelineRows({
      base: BASE,
      startEpochMs: T0 + 400,
      tool: null,
      noToolSource: "none (wrk): server counters only",
      samples: [
        sample(400, 0),
        sample(1_003, 60, 50, 10),
        sample(2_002, 160, 130, 30),
        sample(2_300, 190, 150, 40),
      ],
      windows: [],
    });
    expect(rows.map((row) => [row.second, row.server_requests, row.l2_hits, row.l1_hits])).toEqual([
      [0, 60, 50, null],
      [1, 100, 80, null],
      [2, 30, 20, null],
    ]);
    expect(rows[1]?.sent).toBeNull();
    expect(rows[1]?.timeline_source).toBe("none (wrk): server counters only");
  });

  test("a missed poll leaves the seconds it spans null, never 0", () => {
    const rows = timelineRows({
      base: BASE,
      startEpochMs: T0,
      tool: null,
      noToolSource: "x",
      samples: [sample(1, 0), sample(1_001, 100), sample(3_002, 300), sample(4_001, 400)],
      windows: [],
    });
    expect(rows.map((row) => row.server_requests)).toEqual([100, null, null, 100]);
  });

  test("the tool's seconds join on the Unix second; a fault labels every second it overlaps", () => {
    const window: FaultWindow = {
      label: "redis down",
      fault: { service: "redis", kind: "down", atS: 1, durationS: 1 },
      startEpochMs: T0 + 1_500,
      endEpochMs: T0 + 2_600,
      error: null,
    };
    const rows = timelineRows({
      base: BASE,
      startEpochMs: T0 + 500,
      tool: {
        source: "vegeta per-request results",
        seconds: [
          { epochS: T0 / 1_000, sent: 5, ok: 5, errors: 0, p50Ms: 1, p99Ms: 2 },
          { epochS: T0 / 1_000 + 2, sent: 10, ok: 9, errors: 1, p50Ms: 3, p99Ms: 90 },
        ],
      },
      noToolSource: "x",
      samples: [],
      windows: [window],
    });
    expect(rows.map((row) => [row.second, row.sent, row.errors, row.p99_ms, row.faults])).toEqual([
      [0, 5, 0, 2, ""],
      [1, 0, 0, null, "redis down"],
      [2, 10, 1, 90, "redis down"],
    ]);
  });
});
