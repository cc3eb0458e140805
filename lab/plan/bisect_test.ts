import { describe, expect, test } from "bun:test";
import { type Bisection, type BisectOptions, bisect, type Step } from "./bisect.ts";

const OPTIONS: BisectOptions = {
  startRps: 1_000,
  tolerance: 0.05,
  widen: 1.25,
  maxSteps: 10,
  minRps: 10,
  maxRps: 100_000,
};

/** Runs the search against `holds` (a fake server): every step tried, and the answer. */
function search(holds: (rps: number) => boolean, options: Partial<BisectOptions> = {}) {
  const steps: Step[] = [];
  for (;;) {
    const next: Bisection = bisect(steps, { ...OPTIONS, ...options });
    if (next.done) return { steps, answer: next };
    steps.push({ rateRps: next.rateRps, held: holds(next.rateRps) });
  }
}

describe("bisect", () => {
  test("a capacity near the prediction is bracketed to 5% in five steps, starting at the prediction", () => {
    const { steps, answer } = search((rps) => rps <= 1_100);
    expect(steps.map((s) => s.rateRps)).toEqual([1_000, 1_250, 1_118, 1_057, 1_087]);
    if (!answer.done) throw new Error("not done");
    expect(answer).toMatchObject({ heldRps: 1_087, brokenRps: 1_118, steps: 5 });
    expect(answer.reason).toBe("bracketed to 5%");
    expect(
      ((answer.brokenRps as number) - (answer.heldRps as number)) / (answer.heldRps as number),
    ).toBeLessThan(0.05);
  });

  test("a capacity far above the prediction widens the bracket, each step further", () => {
    const { steps, answer } = search((rps) => rps <= 3_700);
    // × 1.25, then × 1.5625, then × 2.44: 1000, 1250, 1953, 4768, then bisected.
    expect(steps.slice(0, 4).map((s) => s.rateRps)).toEqual([1_000, 1_250, 1_953, 4_768]);
    expect(answer).toMatchObject({ done: true, reason: "bracketed to 5%" });
    if (!answer.done) throw new Error("not done");
    expect(answer.heldRps as number).toBeLessThanOrEqual(3_700);
    expect(answer.brokenRps as number).toBeGreaterThan(3_700);
    expect(answer.brokenRps as number).toBeLessThanOrEqual(1.05 * (answer.heldRps as number));
  });

  test("a capacity far below the prediction widens downwards", () => {
    const { steps, answer } = search((rps) => rps <= 300);
    expect(steps.slice(0, 4).map((s) => s.rateRps)).toEqual([1_000, 800, 512, 210]);
    if (!answer.done) throw new Error("not done");
    expect(answer.heldRps as number).toBeLessThanOrEqual(300);
    expect(answer.brokenRps as number).toBeGreaterThan(300);
    expect(answer.brokenRps as number).toBeLessThanOrEqual(1.05 * (answer.heldRps as number));
  });

  test("the step cap ends the search with the bracket it has", () => {
    const { steps, answer } = search((rps) => rps <= 50_000, { maxSteps: 3 });
    expect(steps).toHaveLength(3);
    expect(answer).toMatchObject({
      done: true,
      heldRps: 1_953,
      brokenRps: null,
      reason: "step cap: 3 steps",
    });
  });

  test("a step that broke for any reason (invalid, dropped load) counts against the rate like a slow one", () => {
    // The caller's verdict: a rate at which the tool dropped load broke, whatever its p99.
    const dropped = new Set([1_250]);
    const { answer } = search((rps) => rps <= 2_000 && !dropped.has(rps));
    // The bracket closes under the rate that broke, though rates above it would have held.
    expect(answer).toMatchObject({ done: true, heldRps: 1_216, brokenRps: 1_250 });
  });

  test("the rate limits end a search that never breaks or never holds", () => {
    expect(search(() => true, { maxRps: 3_000 }).answer).toMatchObject({
      heldRps: 3_000,
      reason: "held at the highest rate, 3000 rps",
    });
    expect(search(() => false, { minRps: 100 }).answer).toMatchObject({
      heldRps: null,
      brokenRps: 100,
      reason: "broke at the lowest rate, 100 rps",
    });
  });

  test("steps read back from rows resume the search; a hold above a break is said, not bisected", () => {
    expect(
      bisect(
        [
          { rateRps: 1_000, held: true },
          { rateRps: 1_250, held: false },
        ],
        OPTIONS,
      ),
    ).toEqual({ done: false, rateRps: 1_118 });
    expect(
      bisect(
        [
          { rateRps: 1_000, held: false },
          { rateRps: 1_250, held: true },
        ],
        OPTIONS,
      ),
    ).toMatchObject({ done: true, reason: "not monotone: held at 1250 rps, above a break at 1000 rps" });
    expect(() => bisect([], { ...OPTIONS, widen: 1 })).toThrow(RangeError);
  });
});

describe("bisect, each break confirmed", () => {
  test("a break that bounds the answer is run again; one that holds the second time counts as held", () => {
    // 1 118 breaks once (a stall), then holds; the true capacity is 1 150.
    let stalls = 1;
    const { steps, answer } = search(
      (rps) => {
        if (rps === 1_118 && stalls > 0) {
          stalls--;
          return false;
        }
        return rps <= 1_150;
      },
      { confirm: 2 },
    );
    expect(steps.filter((s) => s.rateRps === 1_118)).toHaveLength(2);
    expect(answer).toMatchObject({ done: true, reason: "bracketed to 5%" });
    if (!answer.done) throw new Error("not done");
    expect(answer.heldRps as number).toBeGreaterThanOrEqual(1_118);
    expect(answer.brokenRps as number).toBeGreaterThan(1_150);
  });

  test("a real wall is confirmed with one more step, and the answer is the same as without", () => {
    const once = search((rps) => rps <= 1_100).answer;
    const twice = search((rps) => rps <= 1_100, { confirm: 2 });
    expect(twice.answer).toMatchObject({ heldRps: 1_087, brokenRps: 1_118, reason: "bracketed to 5%" });
    expect(twice.steps).toHaveLength((once.done ? once.steps : 0) + 1);
    expect(twice.steps.filter((s) => s.rateRps === 1_118)).toHaveLength(2);
  });

  test("a hold above a single break re-runs the break before it calls the steps not monotone", () => {
    const steps = [
      { rateRps: 1_000, held: false },
      { rateRps: 1_250, held: true },
    ];
    expect(bisect(steps, { ...OPTIONS, confirm: 2 })).toEqual({ done: false, rateRps: 1_000 });
    expect(bisect([...steps, { rateRps: 1_000, held: false }], { ...OPTIONS, confirm: 2 })).toMatchObject({
      done: true,
      reason: "not monotone: held at 1250 rps, above a break at 1000 rps",
    });
  });
});

test("a break overturned at the top of the holds steps up by the tolerance, not outwards", () => {
  const steps = [
    { rateRps: 1_000, held: true },
    { rateRps: 1_250, held: false },
    { rateRps: 1_250, held: true },
  ];
  expect(bisect(steps, { ...OPTIONS, confirm: 2 })).toEqual({ done: false, rateRps: 1_312 });
});
