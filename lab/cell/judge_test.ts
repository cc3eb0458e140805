import { describe, expect, test } from "bun:test";
import type { NormalizedResult } from "../plan/attack_plan.ts";
import {
  HIT_RATIO_TOLERANCE,
  judge,
  judgeStream,
  type StreamEvidence,
  sampledHitRatioTolerance,
  warmupCountProblem,
} from "./judge.ts";

describe("stream checks", () => {
  const clean: StreamEvidence = {
    targetsSent: 20_000,
    reused: 0,
    allowedReuseRatio: 0,
    distinctKeys: 4_980,
    distinctKeysExpected: 5_000,
    distinctKeysTolerance: 150,
    hitRatio: 0.781,
    hitRatioExpected: 0.78,
    hitRatioTolerance: HIT_RATIO_TOLERANCE,
    cacheErrors: 0,
    faultsDeclared: false,
    faultsReachRedis: false,
    staleChecksFailed: 0,
  };

  test("a fresh, clean run passes", () => {
    expect(judgeStream(clean)).toBeNull();
  });

  test("each check fires on its own evidence", () => {
    expect(judgeStream({ ...clean, reused: 2_000 })).toBe(
      "re-sent targets: 2000 of 20000 requests repeated a stream position (ratio 0.1000 > 0)",
    );
    expect(judgeStream({ ...clean, reused: 150, allowedReuseRatio: 0.01 })).toBeNull();
    expect(judgeStream({ ...clean, distinctKeys: 4_000 })).toBe(
      "distinct keys: the server saw 4000, a fresh stream of 20000 requests gives 5000 ± 150",
    );
    expect(judgeStream({ ...clean, hitRatio: 0.9 })).toBe(
      "hit ratio 0.900 deviates from the simulation of the same key stream (0.780) by more than 0.020",
    );
    expect(judgeStream({ ...clean, cacheErrors: 3 })).toContain("3 cache errors were swallowed");
    expect(judgeStream({ ...clean, cacheErrors: 3, faultsDeclared: true })).toBeNull();
    expect(judgeStream({ ...clean, staleChecksFailed: 1 })).toBe("1 stale-read checks failed");
  });

  test("with faults the hit ratio may fall below the healthy simulation, never rise above it", () => {
    const faulted = { ...clean, faultsDeclared: true, faultsReachRedis: true, cacheErrors: 40 };
    expect(judgeStream({ ...faulted, hitRatio: 0.5 })).toBeNull();
    expect(judgeStream({ ...faulted, hitRatio: 0.9 })).toContain("hit ratio 0.900 deviates");
    expect(judgeStream({ ...clean, hitRatio: 0.5 })).toContain("hit ratio 0.500 deviates");
  });

  test("Redis evicting under its maxmemory may explain a hit ratio below the simulation, nothing else does", () => {
    expect(judgeStream({ ...clean, hitRatio: 0.7, redisEvictedKeys: 12_000 })).toBeNull();
    expect(judgeStream({ ...clean, hitRatio: 0.7, redisEvictedKeys: 0 })).toContain(
      "hit ratio 0.700 deviates",
    );
    expect(judgeStream({ ...clean, hitRatio: 0.9, redisEvictedKeys: 12_000 })).toContain("hit ratio 0.900");
  });

  test("a Redis fault that never reached the server (0 cache errors) makes the row invalid", () => {
    const faulted = { ...clean, faultsDeclared: true, faultsReachRedis: true };
    expect(judgeStream(faulted)).toBe(
      "the Redis faults never reached the server: 0 cache errors while Redis was down or hung",
    );
    expect(judgeStream({ ...faulted, cacheErrors: 1 })).toBeNull();
  });

  test("every failing check is named, not just the first", () => {
    const reason = judgeStream({ ...clean, reused: 2_000, distinctKeys: 4_000, hitRatio: 0.9 }) ?? "";
    expect(reason.split("; ")).toHaveLength(3);
  });

  test("a sampling tool's tolerance widens with the noise of two independent draws, never below 0.02", () => {
    expect(sampledHitRatioTolerance(1, 20_000)).toBe(HIT_RATIO_TOLERANCE);
    expect(sampledHitRatioTolerance(55, 10_000)).toBeCloseTo((4 * Math.SQRT2 * 55) / 10_000, 9);
  });
});

describe("load shedding", () => {
  const result: NormalizedResult = {
    tool: "vegeta",
    toolVersion: "12.13.0",
    model: "open",
    offeredRps: 1_000,
    requests: 10_000,
    completed: 10_000,
    ok: 8_000,
    statusCounts: { "200": 8_000, "503": 2_000 },
    errorCounts: {},
    droppedOrAborted: null,
    achievedRps: 1_000,
    okRps: 800,
    latencyMs: { min: 1, mean: 1, p50: 1, p90: 1, p95: 1, p99: 1, p99_9: 1, max: 1 },
    timeline: null,
    bytesIn: 1,
    durationS: 10,
    drainS: 0,
    sent: { kind: "prefix", count: 10_000 },
  };
  const context = { maxErrorRatio: 0.01, serverRequests: 10_000, inFlightAllowance: 50 };

  test("shed 503s are the outcome where the experiment expects shedding, and errors where it does not", () => {
    expect(judge(result, { ...context, shed: 2_000, sheddingExpected: true })).toBeNull();
    expect(judge(result, { ...context, shed: 2_000 })).toBe("error ratio 0.2000 > 0.01 (2000 of 10000)");
  });

  test("the tool's 503s must match the server's own count of what it shed", () => {
    expect(judge(result, { ...context, shed: 1_500, sheddingExpected: true })).toBe(
      "the server shed 1500 requests but the tool counted 2000 503s",
    );
    const blind = { ...result, statusCounts: null };
    expect(judge(blind, { ...context, shed: 2_000, sheddingExpected: true })).toContain("cannot count 503s");
  });
});

describe("the warm-up's count", () => {
  test("the server counted every answered request and no more than were sent: the simulation's start holds", () => {
    expect(warmupCountProblem({ server: 100, completed: 100, sent: 100 })).toBeNull();
    expect(warmupCountProblem({ server: 101, completed: 100, sent: 102 })).toBeNull(); // a timeout that arrived
    expect(warmupCountProblem(null)).toBeNull();
  });

  test("more requests at the server than the tool sent, or fewer than it had answered, make the run invalid", () => {
    expect(warmupCountProblem({ server: 103, completed: 100, sent: 100 })).toBe(
      "the warm-up: the server counted 103 requests, the tool 100 answered of 100 sent: the simulation does not start from what the server saw",
    );
    expect(warmupCountProblem({ server: 97, completed: 100, sent: 100 })).toContain("counted 97 requests");
  });
});
