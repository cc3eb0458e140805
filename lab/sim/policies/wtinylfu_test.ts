import { describe, expect, test } from "bun:test";
import { FrequencySketch, WTinyLfuCache } from "./wtinylfu.ts";

/** Cache-aside: a read hits, or misses and fills. */
function read(cache: WTinyLfuCache, key: number): boolean {
  if (cache.get(key)) return true;
  cache.set(key);
  return false;
}

/** Capacity 100: window 1, main 99 (protected 79); keys 0 … 99 read once, so 99 in the window, 0 … 98 in probation. */
function filled(): WTinyLfuCache {
  const cache = new WTinyLfuCache({ capacity: 100, keyCount: 4000 });
  for (let key = 0; key < 100; key++) read(cache, key);
  return cache;
}

describe("W-TinyLFU (1% window, SLRU main, sketch with a doorkeeper)", () => {
  test("filling: the window holds the newest key, the others wait in probation", () => {
    const cache = filled();
    expect([cache.segmentOf(99), cache.segmentOf(98), cache.segmentOf(0)]).toEqual([
      "window",
      "probation",
      "probation",
    ]);
  });

  test("a one-hit wonder pushed out of the window loses to main's victim and is dropped", () => {
    const cache = filled();
    read(cache, 1000); // 99 leaves the window: estimate 1 (its doorkeeper bit) against victim 0's 1: rejected
    expect([cache.segmentOf(99), cache.segmentOf(0), cache.segmentOf(1000)]).toEqual([
      null,
      "probation",
      "window",
    ]);
    read(cache, 1001); // the one-hit wonder 1000 goes the same way
    expect([cache.segmentOf(1000), cache.segmentOf(0)]).toEqual([null, "probation"]);
  });

  test("a frequent candidate is admitted over main's victim, and a probation hit moves it to protected", () => {
    const cache = filled();
    for (let i = 0; i < 4; i++) read(cache, 2000); // a miss, then three window hits: estimate 4
    expect(cache.sketch.frequency(2000)).toBe(4);
    read(cache, 3000); // 2000 (4) beats probation's LRU 0 (1): 0 is evicted, 2000 enters probation
    expect([cache.segmentOf(2000), cache.segmentOf(0), cache.segmentOf(1)]).toEqual([
      "probation",
      null,
      "probation",
    ]);
    expect(read(cache, 2000)).toBe(true);
    expect(cache.segmentOf(2000)).toBe("protected");
  });

  test("protected holds 80% of main; its overflow goes back to probation's head", () => {
    const cache = filled(); // main 99: protected 79, probation the rest
    for (let key = 0; key < 79; key++) read(cache, key);
    expect([cache.segmentOf(0), cache.segmentOf(78), cache.segmentOf(79)]).toEqual([
      "protected",
      "protected",
      "probation",
    ]);
    read(cache, 79); // the 80th: protected's LRU, 0, is demoted
    expect([cache.segmentOf(0), cache.segmentOf(1), cache.segmentOf(79)]).toEqual([
      "probation",
      "protected",
      "protected",
    ]);
  });

  test("the sketch: a first sighting lands in the doorkeeper only; 10·capacity sightings halve the counts", () => {
    const sketch = new FrequencySketch(10); // sample size 100
    sketch.increment(1);
    expect(sketch.frequency(1)).toBe(1);
    for (let i = 0; i < 8; i++) sketch.increment(1);
    expect(sketch.frequency(1)).toBe(9); // 8 in the count-min rows + 1 doorkeeper
    for (let i = 0; i < 90; i++) sketch.increment(2);
    expect(sketch.frequency(1)).toBe(9);
    sketch.increment(2); // the 100th: every counter halves (8 → 4) and the doorkeeper clears
    expect([sketch.frequency(1), sketch.frequency(2)]).toEqual([4, 7]);
  });

  test("counters saturate at 15 (4 bits)", () => {
    const sketch = new FrequencySketch(1000);
    for (let i = 0; i < 40; i++) sketch.increment(7);
    expect(sketch.frequency(7)).toBe(16);
  });

  test("an invalidation removes the copy; the next read is a miss", () => {
    const cache = filled();
    cache.delete(50);
    expect([cache.segmentOf(50), read(cache, 50)]).toEqual([null, false]);
  });
});
