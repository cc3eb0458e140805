import { describe, expect, test } from "bun:test";
import { seededRandom } from "../plan/targets.ts";
import { traceStats } from "./stats.ts";
import { compactTrace, type TraceOp, type TraceRequest } from "./trace.ts";

function request(key: string, op: TraceOp, sizeBytes: number | null, tsMs: number | null): TraceRequest {
  return { key, op, sizeBytes, tsMs };
}

describe("traceStats", () => {
  test("gives every field of a small trace as worked by hand", () => {
    const trace = compactTrace([
      request("a", "read", 100, 0),
      request("b", "read", 200, 100),
      request("a", "write", 150, 200),
      request("c", "read", 50, 1_500),
      request("a", "read", null, 3_500),
      request("b", "delete", 0, 3_600), // a delete's size says nothing of the values
    ]);
    const stats = traceStats(trace);
    expect(stats).toEqual({
      requests: 6,
      distinctKeys: 3,
      readShare: 4 / 6,
      writeShare: 1 / 6,
      deleteShare: 1 / 6,
      oneHitWonderRatio: 1 / 3, // c
      oneHitWonderWindow: "whole trace",
      compulsoryMissRatio: 3 / 6,
      compulsoryByteMissRatio: (100 + 200 + 50) / (100 + 200 + 150 + 50),
      meanObjectFrequency: 2,
      // Frequencies 3, 2 (c's 1 is out of the fit): slope ln(2/3)/ln 2.
      zipfAlpha: expect.closeTo(-Math.log(2 / 3) / Math.log(2), 12),
      zipfFit: "least squares of ln(frequency) on ln(rank), ranks with frequency ≥ 2",
      zipfFitRanks: 2,
      workingSetKeys: 3,
      workingSetBytes: 150 + 200 + 50, // each key's last size
      sizedRequests: 4,
      valueSizeP50Bytes: 100, // of 50, 100, 150, 200
      valueSizeP90Bytes: 200,
      valueSizeP99Bytes: 200,
      valueSizeMaxBytes: 200,
      percentileMethod: "nearest rank",
      // a@2 sees b (1), a@4 sees c (1), b@5 sees a and c (2): median 1.
      reuseDistanceMedian: 1,
      durationS: 3.6,
      requestRateRps: 6 / 3.6,
      // Seconds 0..3 hold 3, 1, 0, 2 requests.
      secondRateP50Rps: 1,
      secondRateP99Rps: 3,
      secondRatePeakRps: 3,
    });
  });

  test("gives null, never 0, for what a bare key list cannot say", () => {
    const stats = traceStats(compactTrace(["a", "b", "c"].map((key) => request(key, "read", null, null))));
    expect(stats).toMatchObject({
      requests: 3,
      oneHitWonderRatio: 1,
      compulsoryByteMissRatio: null,
      zipfAlpha: null,
      zipfFitRanks: 0,
      workingSetBytes: null,
      sizedRequests: 0,
      valueSizeP50Bytes: null,
      valueSizeMaxBytes: null,
      reuseDistanceMedian: null,
      durationS: null,
      requestRateRps: null,
      secondRatePeakRps: null,
    });
  });

  test("fits no alpha on one repeated rank, and no rate on one instant or on unknown times", () => {
    const oneRank = traceStats(
      compactTrace([
        request("a", "read", null, 5),
        request("a", "read", null, 5),
        request("b", "read", null, null),
      ]),
    );
    expect(oneRank.zipfAlpha).toBeNull();
    expect(oneRank.zipfFitRanks).toBe(1);
    expect(oneRank.durationS).toBeNull();
    expect(oneRank.reuseDistanceMedian).toBe(0);
  });

  test("fits alpha 0 (not −0) to keys requested equally often", () => {
    const keys = ["a", "b", "c", "a", "b", "c"];
    expect(traceStats(compactTrace(keys.map((key) => request(key, "read", null, null)))).zipfAlpha).toBe(0);
  });

  test("fits the exponent of Zipf frequencies", () => {
    const requests: TraceRequest[] = [];
    for (let rank = 1; rank <= 200; rank++) {
      const frequency = Math.round(5_000 / rank ** 1.2);
      for (let i = 0; i < frequency; i++) requests.push(request(`k${rank}`, "read", null, null));
    }
    // Shuffled, so the fit cannot lean on the order of the requests.
    const random = seededRandom(7);
    for (let i = requests.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [requests[i], requests[j]] = [requests[j] as TraceRequest, requests[i] as TraceRequest];
    }
    expect(traceStats(compactTrace(requests)).zipfAlpha).toBeCloseTo(1.2, 2);
  });

  test("gives the same per-second rates to a trace out of time order", () => {
    const times = [3_600, 0, 1_500, 200, 3_500, 100];
    const stats = traceStats(compactTrace(times.map((tsMs) => request("a", "read", null, tsMs))));
    expect([stats.secondRateP50Rps, stats.secondRateP99Rps, stats.secondRatePeakRps]).toEqual([1, 3, 3]);
    expect(stats.durationS).toBe(3.6);
  });

  test("counts empty seconds in the per-second rates, however long the gap", () => {
    const stats = traceStats(
      compactTrace([
        request("a", "read", null, 0),
        request("a", "read", null, 10),
        request("a", "read", null, 1e12),
      ]),
    );
    expect(stats.secondRatePeakRps).toBe(2);
    expect(stats.secondRateP99Rps).toBe(0);
    expect(stats.durationS).toBe(1e9);
  });

  test("refuses an empty trace", () => {
    expect(() => traceStats(compactTrace([]))).toThrow("the trace has no requests: received 0");
  });
});
