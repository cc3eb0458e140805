import { describe, expect, test } from "bun:test";
import { intervalsOverlap, median, medianInterval } from "./intervals.ts";

describe("median", () => {
  test("median of odd and even counts, null when empty", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe("medianInterval", () => {
  test("[min, max] of n < 6 states its own confidence: 75% at 3, 87.5% at 4, 93.75% at 5", () => {
    expect(medianInterval([5, 1, 3])).toEqual({ median: 3, low: 1, high: 5, n: 3, confidence: 0.75 });
    expect(medianInterval([1, 2, 3, 4])?.confidence).toBe(0.875);
    expect(medianInterval([1, 2, 3, 4, 5])?.confidence).toBe(0.9375);
  });

  test("from n = 6 it reaches 95% and narrows inward as n grows", () => {
    const six = medianInterval([1, 2, 3, 4, 5, 6]);
    expect(six).toMatchObject({ low: 1, high: 6 });
    expect(six?.confidence).toBeCloseTo(0.96875, 6);
    // n = 9: [x(2), x(8)] covers with 1 − 2·(1 + 9)/512 = 0.9609.
    const nine = medianInterval([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(nine).toMatchObject({ low: 2, high: 8 });
    expect(nine?.confidence).toBeCloseTo(0.9609375, 6);
  });

  test("fewer than 3 samples give no interval", () => {
    expect(medianInterval([1, 2])).toBeNull();
    expect(medianInterval([1])).toBeNull();
    expect(medianInterval([1, 2], { minN: 2 })?.confidence).toBe(0.5);
  });

  test("overlap: touching intervals overlap, disjoint ones do not", () => {
    expect(intervalsOverlap({ low: 1, high: 2 }, { low: 2, high: 3 })).toBe(true);
    expect(intervalsOverlap({ low: 1, high: 2 }, { low: 2.1, high: 3 })).toBe(false);
  });
});
