import { expect, test } from "bun:test";
import { seededRandom } from "../plan/targets.ts";
import { RecencyMarks } from "./fenwick.ts";

test("RecencyMarks gives each key's position in the recency list of live keys, across renumberings", () => {
  // 20 keys: 104 slots, so 5 000 touches renumber the slots dozens of times.
  const marks = new RecencyMarks(20);
  const list: number[] = []; // most recent first
  const random = seededRandom(3);
  for (let step = 0; step < 5_000; step++) {
    const key = Math.floor(random() * 20);
    expect(marks.distance(key)).toBe(list.indexOf(key));
    const at = list.indexOf(key);
    if (at >= 0) list.splice(at, 1);
    if (random() < 0.1) marks.remove(key);
    else {
      marks.touch(key);
      list.unshift(key);
    }
  }
});
