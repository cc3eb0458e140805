/** The row's cost columns: round trips, CPU per second of the run, the tier timing's columns, the load tool's warning. */
import { describe, expect, test } from "bun:test";
import type { LoadTimes } from "../../server/load_timer.ts";
import { encodeHistogram } from "../model/histogram.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import { cpuColumns, roundTripColumns, tierColumns, warningsOf } from "./row_costs.ts";

const times = (count: number, meanMs: number): LoadTimes => ({
  count,
  sumMs: count * meanMs,
  meanMs,
  p50Ms: meanMs,
  p99Ms: meanMs * 3,
  buckets: [],
});

describe("row costs", () => {
  test("CPU seconds per second of the run; an unknown figure stays empty", () => {
    expect(cpuColumns({ loadgenCpuS: 12, serverCpuS: 6, postgresCpuS: 3, redisCpuS: null }, 10)).toEqual({
      postgres_cpu_s: 3,
      redis_cpu_s: null,
      loadgen_cpu_per_s: 1.2,
      server_cpu_per_s: 0.6,
      postgres_cpu_per_s: 0.3,
      redis_cpu_per_s: null,
    });
  });

  test("a load tool over half the machine's CPU is a warning; at half or less there is none", () => {
    expect(warningsOf({ loadgenCpuS: 10.1 }, 10, 2)).toContain("the load tool used 1.01 of 2 CPUs");
    expect(warningsOf({ loadgenCpuS: 10 }, 10, 2)).toBeNull();
    expect(warningsOf({ loadgenCpuS: null }, 10, 2)).toBeNull();
  });

  test("srv_* per outcome and redis_cmd_* from the server's timing; no timing, every one empty", () => {
    // One in four timed: the counts are every request's, the times the sampled ones'.
    const columns = tierColumns({
      requests: {
        l1_hit: times(175, 0.01),
        l2_hit: times(0, 0),
        miss: times(75, 0.5),
        join: null,
        write: null,
      },
      counts: { l1_hit: 700, l2_hit: 0, miss: 300, join: null, write: null },
      answered: times(250, 0.157),
      redisCommands: null,
    }) as Record<string, unknown>;
    expect(columns).toMatchObject({
      srv_mean_ms: 0.157,
      srv_l1_hit_count: 700,
      srv_miss_count: 300,
      srv_l1_hit_mean_ms: 0.01,
      srv_miss_p99_ms: 1.5,
      srv_write_count: null,
      redis_cmd_count: null,
    });
    const none = tierColumns(null) as Record<string, unknown>;
    expect(Object.values(none).every((value) => value === null)).toBe(true);
    expect(Object.keys(none)).toHaveLength(30);
  });

  test("srv_*_hist: each outcome's buckets as lab/model/histogram.ts writes them; no timing or no request, empty", () => {
    const buckets: [number, number][] = [
      [400, 3],
      [401, 2],
      [412, 1],
    ];
    const columns = tierColumns({
      requests: {
        l1_hit: null,
        l2_hit: times(0, 0),
        miss: { ...times(6, 0.4), buckets },
        join: null,
        write: null,
      },
      counts: { l1_hit: null, l2_hit: 0, miss: 6, join: null, write: null },
      answered: times(6, 0.4),
      redisCommands: null,
    }) as Record<string, unknown>;
    expect(columns).toMatchObject({
      srv_l1_hit_hist: null,
      srv_l2_hit_hist: null,
      srv_miss_hist: encodeHistogram(buckets),
      srv_write_hist: null,
    });
    // Server buckets 400 and 401 merge into row bucket 80, 412 is 82: one run with a zero between.
    expect(columns.srv_miss_hist).toBe("80:5,0,1");
  });

  test("round trips: the figure asked on a target, the base where the path is proxied, all that was added", () => {
    const attack = {
      name: "reads",
      network: { postgres: { latencyMs: 2.29 }, redis: { latencyMs: 0.25 } },
    } as unknown as ExperimentAttack;
    const context = { asked: { postgres: 5 }, base: { missCostMs: 0.42, redisRttMs: 0.1 } };
    expect(roundTripColumns(attack, ["postgres", "redis"], context)).toEqual({
      miss_cost_ms: 5,
      miss_cost_base_ms: 0.42,
      miss_cost_added_ms: 4.58,
      // No flag for Redis: nothing asked, but its base and the file's own distance are in the row.
      redis_rtt_ms: null,
      redis_rtt_base_ms: 0.1,
      redis_rtt_added_ms: 0.5,
    });
    // Its base twin: nothing asked of it, nothing added; the same base.
    const twin = { ...attack, name: "reads_base", baseOf: "reads", network: { postgres: { latencyMs: 0 } } };
    expect(roundTripColumns(twin, ["postgres"], context)).toEqual({
      miss_cost_ms: null,
      miss_cost_base_ms: 0.42,
      miss_cost_added_ms: 0,
      redis_rtt_ms: null,
      redis_rtt_base_ms: null,
      redis_rtt_added_ms: null,
    });
  });
});
