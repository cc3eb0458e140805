import { describe, expect, test } from "bun:test";
import { erlangC, waitOf, waitPoints, waitQuantileMs } from "./queueing.ts";

describe("M/M/c", () => {
  test("Erlang C: ρ for one server, 1/3 for two servers offered one erlang, 1 at saturation", () => {
    expect(erlangC(1, 0.7)).toBeCloseTo(0.7, 12);
    expect(erlangC(2, 1)).toBeCloseTo(1 / 3, 12);
    expect(erlangC(4, 4)).toBe(1);
    expect(erlangC(10, 0)).toBe(0);
  });

  test("M/M/1's wait: mean ρ/(μ − λ), P(W > t) = ρ·e^(−(μ−λ)t)", () => {
    // 1 ms a request, 500 a second: ρ = 0.5, μ − λ = 0.5 per ms.
    const wait = waitOf(1, 1, 500);
    if (wait === null) throw new Error("saturated");
    expect(wait.rho).toBeCloseTo(0.5, 12);
    expect(wait.meanMs).toBeCloseTo(1, 12);
    // p99: 0.5·e^(−0.5 t) = 0.01 → t = 2 ln 50.
    expect(waitQuantileMs(wait, 0.99)).toBeCloseTo(2 * Math.log(50), 9);
    expect(waitQuantileMs(wait, 0.4)).toBe(0);
    expect(waitOf(1, 1, 1_000)).toBeNull();
  });

  test("the wait's points carry its probability and its mean", () => {
    const wait = waitOf(4, 10, 300);
    if (wait === null) throw new Error("saturated");
    const points = waitPoints(wait, 200);
    expect(points.reduce((n, [, p]) => n + p, 0)).toBeCloseTo(1, 12);
    const mean = points.reduce((n, [ms, p]) => n + ms * p, 0);
    expect(Math.abs(mean / wait.meanMs - 1)).toBeLessThan(0.02);
  });
});
