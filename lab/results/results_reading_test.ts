import { describe, expect, test } from "bun:test";
import { unbackedFigures } from "./results_reading.ts";

describe("a reading's figures", () => {
  const page = "| local | 0.858 | 3.84 [2.36–5.97, 75%] | 10 000 entries | −74% |";

  test("each figure the page shows passes, whatever its thousands separator or sign", () => {
    expect(unbackedFigures("local hit 0.858, p99 3.84 ms (−74%) with 10,000 entries", page)).toEqual([]);
    expect(unbackedFigures("10 000 entries, 75% confidence", page)).toEqual([]);
    // Names with digits in them are words: p99, L1, r2.
    expect(unbackedFigures("p99 of local's L1 in r2: 3.84 ms", page)).toEqual([]);
  });

  test("a figure the page does not show is named, once", () => {
    expect(unbackedFigures("local hit 0.866, then 0.866 again; p99 3.8 ms", page)).toEqual(["0.866", "3.8"]);
    expect(unbackedFigures("20 000 entries", page)).toEqual(["20000"]);
  });
});
