/** The row's cost columns: CPU per second of the run, the tier timing's columns, and the load tool's warning. */
import { describe, expect, test } from "bun:test";
import type { LoadTimes } from "../../server/load_timer.ts";
import { cpuColumns, tierColumns, warningsOf } from "./row_costs.ts";

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
      requests: { l1_hit: times(175, 0.01), l2_hit: times(0, 0), miss: times(75, 0.5), write: null },
      counts: { l1_hit: 700, l2_hit: 0, miss: 300, write: null },
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
    expect(Object.keys(none)).toHaveLength(21);
  });
});
