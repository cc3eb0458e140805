import { describe, expect, test } from "bun:test";
import { incompleteBeta, mannWhitneyU, testSamples, tTwoSidedP, welchT } from "./significance.ts";

describe("mannWhitneyU", () => {
  test("matches scipy's published example (males vs females: U = 17, exact p = 0.1111)", () => {
    // scipy.stats.mannwhitneyu docs, "Examples": mannwhitneyu(males, females, method="exact").
    const { u, p } = mannWhitneyU([19, 22, 16, 29, 24], [20, 11, 17, 12]);
    expect(u).toBe(17);
    expect(p).toBeCloseTo(1 / 9, 12);
  });

  test("complete separation gives 2 / C(n1 + n2, n1): 0.10 for 3 vs 3, 0.029 for 4 vs 4, 0.008 for 5 vs 5", () => {
    // Hand count (FACTS §14): only the two extreme arrangements are as far out as the observed one.
    expect(mannWhitneyU([1, 2, 3], [4, 5, 6]).p).toBeCloseTo(2 / 20, 12);
    expect(mannWhitneyU([5, 6, 7, 8], [1, 2, 3, 4]).p).toBeCloseTo(2 / 70, 12);
    expect(mannWhitneyU([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).p).toBeCloseTo(2 / 252, 12);
  });

  test("ties use mid-ranks and the exact conditional distribution; equal samples give p = 1", () => {
    // [1, 1] vs [1, 2]: doubled mid-ranks 4,4,4,8; a's sum 8 of the C(4,2) = 6 subsets: 3 give 8, 3 give 12.
    expect(mannWhitneyU([1, 1], [1, 2]).p).toBeCloseTo(1, 12);
    expect(mannWhitneyU([3, 3, 3, 3], [3, 3, 3, 3]).p).toBe(1);
    expect(mannWhitneyU([1, 1, 1, 1], [2, 2, 2, 2]).p).toBeCloseTo(2 / 70, 12);
  });
});

describe("t distribution", () => {
  test("two-sided p at published critical values is 0.05 (t tables: df 1 → 12.706, 4 → 2.776, 10 → 2.228)", () => {
    expect(tTwoSidedP(12.7062, 1)).toBeCloseTo(0.05, 5);
    expect(tTwoSidedP(2.776445, 4)).toBeCloseTo(0.05, 6);
    expect(tTwoSidedP(2.228139, 10)).toBeCloseTo(0.05, 6);
    // Cauchy (df = 1): P(|T| ≥ 1) = 1/2 exactly.
    expect(tTwoSidedP(1, 1)).toBeCloseTo(0.5, 12);
  });

  test("incompleteBeta matches closed forms: I_x(1, 1) = x, I_x(2, 1) = x²", () => {
    expect(incompleteBeta(0.3, 1, 1)).toBeCloseTo(0.3, 12);
    expect(incompleteBeta(0.7, 2, 1)).toBeCloseTo(0.49, 12);
  });
});

describe("welchT", () => {
  test("a hand-computed case: [0, 2] vs [2, 4] gives t = −√2, df = 2, p = 1 − √2/2", () => {
    // df = 2 closed form: p = 1 − |t| / √(2 + t²) = 1 − √2 / 2.
    const result = welchT([0, 2], [2, 4]);
    expect(result?.t).toBeCloseTo(-Math.SQRT2, 12);
    expect(result?.df).toBeCloseTo(2, 12);
    expect(result?.p).toBeCloseTo(1 - Math.SQRT2 / 2, 10);
  });

  test("no spread on either side is no test, not p = 0 or 1", () => {
    expect(welchT([1, 1, 1], [2, 2, 2])).toBeNull();
  });
});

describe("testSamples", () => {
  test("picks U with ≥ 4 a side, Welch with 2–3, nothing with 1", () => {
    expect(testSamples([1, 2, 3, 4], [5, 6, 7, 8]).method).toBe("U");
    expect(testSamples([1, 2, 3], [5, 6, 7]).method).toBe("welch");
    expect(testSamples([1, 2, 3, 4], [5, 6, 7]).method).toBe("welch");
    const single = testSamples([1], [5, 6, 7]);
    expect(single).toMatchObject({ method: "n<2: no test", p: null });
  });

  test("3 vs 3 cleanly separated reaches p < 0.05 by Welch where U could not", () => {
    expect(testSamples([10, 11, 12], [20, 21, 22]).p as number).toBeLessThan(0.05);
    expect(mannWhitneyU([10, 11, 12], [20, 21, 22]).p).toBeCloseTo(0.1, 12);
  });
});
