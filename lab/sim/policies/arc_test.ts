import { describe, expect, test } from "bun:test";
import { ArcCache } from "./arc.ts";

const [A, B, C, D] = [0, 1, 2, 3] as const;

/** Cache-aside: a read hits, or misses and fills. */
function read(cache: ArcCache, key: number): boolean {
  if (cache.get(key)) return true;
  cache.set(key);
  return false;
}

function lists(cache: ArcCache, keys: readonly number[]): (string | null)[] {
  return keys.map((key) => cache.listOf(key));
}

describe("ARC", () => {
  test("a first read enters T1, a second moves to T2; REPLACE sends T1's LRU to B1 while |T1| > p", () => {
    const cache = new ArcCache({ capacity: 2, keyCount: 5 });
    read(cache, A);
    read(cache, B);
    expect(read(cache, A)).toBe(true);
    expect(lists(cache, [A, B])).toEqual(["t2", "t1"]);
    read(cache, C); // full, in no ghost: |T1| = 1 > p = 0, so B goes to B1
    expect([...lists(cache, [A, B, C]), cache.p]).toEqual(["t2", "b1", "t1", 0]);
  });

  test("p adapts: a B1 miss raises it by max(|B2|/|B1|, 1), a B2 miss lowers it by max(|B1|/|B2|, 1)", () => {
    const cache = new ArcCache({ capacity: 2, keyCount: 5 });
    for (const key of [A, B, A, C]) read(cache, key); // T1 [C], T2 [A], B1 [B], p 0
    expect(read(cache, B)).toBe(false); // a ghost hit is a miss
    // p = min(0 + max(0/1, 1), 2) = 1; REPLACE: |T1| = 1 is not > p, so T2's LRU (A) goes to B2; B enters T2.
    expect([...lists(cache, [A, B, C]), cache.p]).toEqual(["b2", "t2", "t1", 1]);
    read(cache, A);
    // p = max(1 − max(0/1, 1), 0) = 0; REPLACE on a B2 miss: |T1| = 1 > 0, so C goes to B1; A enters T2.
    expect([...lists(cache, [A, B, C]), cache.p]).toEqual(["t2", "t2", "b1", 0]);
  });

  test("the step is the ghosts' ratio when the other ghost is larger", () => {
    const cache = new ArcCache({ capacity: 4, keyCount: 10 });
    for (const key of [A, B, C, D, A, B, C, D]) read(cache, key); // T2 [D C B A]
    // Each new key read twice: its first miss finds T1 empty, so T2's LRU goes to B2 (A, then B, then C).
    for (const key of [4, 4, 5, 5, 6]) read(cache, key);
    expect(lists(cache, [A, B, C, 6])).toEqual(["b2", "b2", "b2", "t1"]);
    read(cache, 7); // |T1| = 1 > p = 0: 6 goes to B1
    expect(cache.listOf(6)).toBe("b1");
    read(cache, 6); // B1 miss: p += max(|B2|/|B1|, 1) = 3/1; |T1| = 1 ≤ 3, so T2's LRU (D) goes to B2
    expect([cache.p, cache.listOf(6), cache.listOf(D)]).toEqual([3, "t2", "b2"]);
  });

  test("|T1| + |B1| = c with B1 empty evicts T1's LRU outright; the directory keeps ≤ 2c keys", () => {
    const cache = new ArcCache({ capacity: 2, keyCount: 10 });
    for (const key of [A, B, C]) read(cache, key); // T1 holds c: A leaves with no ghost
    expect(lists(cache, [A, B, C])).toEqual([null, "t1", "t1"]);
    for (let key = 3; key < 10; key++) read(cache, key);
    const kept = Array.from({ length: 10 }, (_, key) => cache.listOf(key)).filter((list) => list !== null);
    expect(kept.length).toBeLessThanOrEqual(4);
  });

  test("an invalidation frees the entry's slot and keeps the ghosts", () => {
    const cache = new ArcCache({ capacity: 2, keyCount: 5 });
    for (const key of [A, B, A, C]) read(cache, key); // T1 [C], T2 [A], B1 [B]
    cache.delete(A);
    cache.delete(B);
    expect(lists(cache, [A, B, C])).toEqual([null, "b1", "t1"]);
    read(cache, D); // room for D: nothing evicted
    expect(lists(cache, [C, D])).toEqual(["t1", "t1"]);
  });
});
