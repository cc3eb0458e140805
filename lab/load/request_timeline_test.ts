import { describe, expect, test } from "bun:test";
import type { Timeline, TimelineSecond } from "../plan/attack_plan.ts";
import {
  nearestRank,
  type RequestRecord,
  timelineOf,
  timelineProblems,
  timelineTotals,
} from "./request_timeline.ts";

const T0 = 1_800_000_000_000; // an epoch ms on a whole second

function request(
  startMs: number,
  latencyMs: number | null,
  outcome: "ok" | "error" | "none" = "ok",
): RequestRecord {
  return { startMs, latencyMs, ok: outcome === "ok", error: outcome === "error" };
}

describe("timeline", () => {
  test("timeline puts a request in the second it started, not the one it ended in", () => {
    // Started at .900 of second 0, answered 300 ms later in second 1; a bucket by end time would say 0 and 2.
    const timeline = timelineOf([request(T0 + 900, 300), request(T0 + 1_100, 5)], {
      source: "test",
      errors: true,
    });
    expect(timeline.seconds.map((s) => [s.epochS - T0 / 1_000, s.sent, s.p99Ms])).toEqual([
      [0, 1, 300],
      [1, 1, 5],
    ]);
  });

  test("timeline percentiles are exact nearest ranks of each second's own latencies, not interpolated or averaged", () => {
    const latencies = [7, 1, 3, 10, 2, 9, 4, 8, 6, 5]; // 1..10 ms, unsorted
    const second0 = latencies.map((ms, i) => request(T0 + i * 10, ms));
    const second1 = [request(T0 + 1_000, 100), request(T0 + 1_500, 200), request(T0 + 1_999, 300)];
    const timeline = timelineOf([...second1, ...second0], { source: "test", errors: true });
    const [first, next] = timeline.seconds;
    // Nearest rank: p50 = rank ⌈5⌉ = 5 (interpolated: 5.5); p99 = rank ⌈9.9⌉ = 10 (interpolated: 9.91).
    expect(first).toMatchObject({ sent: 10, ok: 10, errors: 0, p50Ms: 5, p99Ms: 10 });
    // Three samples: p50 = rank 2, p99 = rank 3. Averaging the two seconds' p99s would give 155.
    expect(next).toMatchObject({ sent: 3, p50Ms: 200, p99Ms: 300 });
  });

  test("nearestRank takes the value at rank ⌈p·n/100⌉, never between two values", () => {
    const sorted = Float64Array.from({ length: 300 }, (_, i) => i + 1);
    expect(nearestRank(sorted, 99)).toBe(297);
    expect(nearestRank(sorted, 50)).toBe(150);
    expect(nearestRank([1, 2, 3, 4], 50)).toBe(2);
    expect(nearestRank([1, 2, 3, 4], 99)).toBe(4);
    expect(nearestRank([4], 50)).toBe(4);
    expect(nearestRank([], 50)).toBeNull();
  });

  test("timeline fills the seconds between the first and last request, counting oks and errors", () => {
    const timeline = timelineOf(
      [
        request(T0, 1, "ok"),
        request(T0 + 3_200, 2, "error"),
        request(T0 + 3_300, null, "error"),
        request(T0 + 3_400, null, "none"),
      ],
      { source: "test", errors: true },
    );
    expect(timeline.seconds).toEqual([
      { epochS: T0 / 1_000, sent: 1, ok: 1, errors: 0, p50Ms: 1, p99Ms: 1 },
      { epochS: T0 / 1_000 + 1, sent: 0, ok: 0, errors: 0, p50Ms: null, p99Ms: null },
      { epochS: T0 / 1_000 + 2, sent: 0, ok: 0, errors: 0, p50Ms: null, p99Ms: null },
      // Of three started: one error with a latency, one without (not in the percentiles), one unanswered.
      { epochS: T0 / 1_000 + 3, sent: 3, ok: 0, errors: 2, p50Ms: 2, p99Ms: 2 },
    ]);
    expect(timelineTotals(timeline)).toEqual({ sent: 4, ok: 1, errors: 2 });
  });

  test("timeline says errors null when the records cannot tell every error", () => {
    const timeline = timelineOf([request(T0, 1), request(T0 + 2_000, 1, "error")], {
      source: "db",
      errors: false,
    });
    expect(timeline.seconds.map((s) => s.errors)).toEqual([null, null, null]);
    expect(timelineTotals(timeline)).toEqual({ sent: 2, ok: 1, errors: null });
    expect(timelineOf([], { source: "none", errors: true })).toEqual({ source: "none", seconds: [] });
  });

  test("timeline refuses a start that is not a time and a span longer than a day", () => {
    expect(() => timelineOf([request(Number.NaN, 1)], { source: "x", errors: true })).toThrow(
      "startMs is not a time: received NaN",
    );
    expect(() => timelineOf([request(0, 1), request(T0, 1)], { source: "x", errors: true })).toThrow(
      "more than a day",
    );
    expect(() => timelineOf([request(T0, -1)], { source: "x", errors: true })).toThrow(
      "latencyMs is not a duration",
    );
  });

  test("timelineProblems names a gap, a wrong total, seconds outside the run and inconsistent counts", () => {
    const good = timelineOf([request(T0 + 10, 1), request(T0 + 1_010, 1)], { source: "x", errors: true });
    const window = { sent: 2, fromMs: T0, toMs: T0 + 2_000 };
    expect(timelineProblems(good, window)).toEqual([]);
    expect(timelineProblems(good, { ...window, sent: 3 })).toEqual(["Σ sent is 2, the run's count 3"]);
    expect(timelineProblems(good, { ...window, fromMs: T0 + 1_000 })).toEqual([
      `first second ${T0 / 1_000} is before the run (${T0 / 1_000 + 1})`,
    ]);
    expect(timelineProblems(good, { ...window, toMs: T0 + 999 })).toEqual([
      `last second ${T0 / 1_000 + 1} is after the run (${T0 / 1_000})`,
    ]);
    const [a, b] = good.seconds as [TimelineSecond, TimelineSecond];
    const gap: Timeline = { source: "x", seconds: [a, { ...b, epochS: b.epochS + 1 }] };
    expect(timelineProblems(gap, window)).toEqual([
      `second 1: epochS ${T0 / 1_000 + 2} does not follow ${T0 / 1_000}`,
    ]);
    const overfull: Timeline = { source: "x", seconds: [{ ...a, ok: 1, errors: 1 }, b] };
    expect(timelineProblems(overfull, window)).toEqual([`second ${T0 / 1_000}: ok 1 + errors 1 > sent 1`]);
  });
});
