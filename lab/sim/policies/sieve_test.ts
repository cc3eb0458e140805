import { describe, expect, test } from "bun:test";
import { SieveCache } from "./sieve.ts";

const [A, B, C, D, E, F] = [0, 1, 2, 3, 4, 5] as const;

/** Cache-aside: a read hits, or misses and fills. */
function read(cache: SieveCache, key: number): boolean {
  if (cache.get(key)) return true;
  cache.set(key);
  return false;
}

describe("SIEVE", () => {
  test("a hit sets the visited bit; eviction clears set bits from the tail and evicts the first clear one", () => {
    const cache = new SieveCache({ capacity: 3, keyCount: 6 });
    for (const key of [A, B, C]) expect(read(cache, key)).toBe(false);
    expect(read(cache, A)).toBe(true);
    expect(read(cache, B)).toBe(true);
    expect(cache.visited(A) && cache.visited(B)).toBe(true);
    read(cache, D); // hand: A (clear it), B (clear it), C (evict); C was the newest, so the hand wraps to the tail
    expect([cache.get(C), cache.visited(A), cache.visited(B), cache.hand]).toEqual([false, false, false, -1]);
    expect(cache.get(A) && cache.get(B) && cache.get(D)).toBe(true);
  });

  test("the hand stays where it stopped: the next eviction starts there, not at the tail", () => {
    const cache = new SieveCache({ capacity: 4, keyCount: 6 });
    for (const key of [A, B, C, D]) read(cache, key);
    read(cache, A);
    read(cache, B);
    read(cache, E); // clears A and B, evicts C; the hand rests on D (C's newer neighbour)
    expect([cache.get(C), cache.hand]).toEqual([false, D]);
    read(cache, A); // A visited again, behind the hand
    read(cache, F); // from D: D is clear and goes; restarting at the tail would have cleared A and evicted B
    expect([cache.get(D), cache.visited(A), cache.hand]).toEqual([false, true, E]);
    expect(cache.get(B)).toBe(true);
  });

  test("a hit keeps its key without moving it: A B C, hit A, insert D at capacity 3 evicts B", () => {
    const cache = new SieveCache({ capacity: 3, keyCount: 6 });
    for (const key of [A, B, C]) read(cache, key);
    read(cache, A);
    read(cache, D); // evicts B: A's bit saves it without moving it
    expect([cache.get(A), cache.get(B), cache.get(C), cache.get(D)]).toEqual([true, false, true, true]);
  });

  test("invalidating the key under the hand moves the hand to its newer neighbour", () => {
    const cache = new SieveCache({ capacity: 3, keyCount: 6 });
    for (const key of [A, B, C]) read(cache, key);
    read(cache, A);
    read(cache, D); // clears A, evicts B, hand on C
    expect(cache.hand).toBe(C);
    cache.delete(C);
    expect([cache.hand, cache.get(C)]).toEqual([D, false]);
    read(cache, E); // not full (A, D): no eviction
    read(cache, F); // hand at D: clear, so D goes
    expect([cache.get(A), cache.get(D), cache.get(E), cache.get(F)]).toEqual([true, false, true, true]);
  });

  test("capacity 1 holds the last key read; a capacity below 1 entry is refused", () => {
    const cache = new SieveCache({ capacity: 1, keyCount: 6 });
    expect([read(cache, A), read(cache, A), read(cache, B), read(cache, A)]).toEqual([
      false,
      true,
      false,
      false,
    ]);
    expect(() => new SieveCache({ capacity: 0, keyCount: 6 })).toThrow(
      "Cannot model SIEVE: capacity must be an integer ≥ 1 entry: received 0",
    );
  });
});
