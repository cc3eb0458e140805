import { describe, expect, test } from "bun:test";
import { S3FifoCache } from "./s3fifo.ts";

/** Cache-aside: a read hits, or misses and fills. */
function read(cache: S3FifoCache, key: number): boolean {
  if (cache.get(key)) return true;
  cache.set(key);
  return false;
}

function readAll(cache: S3FifoCache, keys: readonly number[]): void {
  for (const key of keys) read(cache, key);
}

/** Capacity 10: small 1 entry's share (10%), main 9, ghost 9; keys 0 … 9 read once fill small. */
function filled(): S3FifoCache {
  const cache = new S3FifoCache({ capacity: 10, keyCount: 20 });
  for (let key = 0; key < 10; key++) read(cache, key);
  return cache;
}

describe("S3-FIFO (S3FIFO-0.1000-2)", () => {
  test("new keys enter small; a key read twice there moves to main, a key read once drops to the ghost", () => {
    const cache = filled();
    expect(cache.queueOf(0)).toBe("small");
    read(cache, 0);
    read(cache, 0); // frequency 2: the move-to-main threshold
    read(cache, 1); // frequency 1: below it
    read(cache, 10); // full: small evicts from its tail: 0 moves to main, 1 goes to the ghost (evicted)
    expect([cache.queueOf(0), cache.queueOf(1), cache.queueOf(2), cache.queueOf(10)]).toEqual([
      "main",
      "ghost",
      "small",
      "small",
    ]);
    expect([cache.get(0), cache.get(1)]).toEqual([true, false]);
  });

  test("a miss on a ghost key enters main, skipping small", () => {
    const cache = filled();
    read(cache, 10); // 0 (frequency 0) to the ghost
    expect(read(cache, 0)).toBe(false); // a miss: the ghost holds no value
    expect([cache.queueOf(0), cache.queueOf(1)]).toEqual(["main", "ghost"]); // 1 made room, from small's tail
  });

  test("a ghost key at the ghost's tail still enters main when its own fill pushes a key into the ghost", () => {
    const cache = filled();
    for (let key = 10; key < 19; key++) read(cache, key); // 0 … 8 to the ghost (9, its size): 0 at its tail
    expect([cache.queueOf(0), cache.queueOf(8)]).toEqual(["ghost", "ghost"]);
    read(cache, 0); // small evicts 9 into the full ghost: the ghost's tail would be 0 had it not left first
    expect([cache.queueOf(0), cache.queueOf(9), cache.queueOf(1)]).toEqual(["main", "ghost", "ghost"]);
  });

  test("main reinserts an entry with frequency > 0 (one less) and evicts the first at 0", () => {
    const cache = filled();
    for (let key = 0; key < 10; key++) readAll(cache, [key, key]);
    // All ten move to main with frequency 0; small empties without evicting, so main (10 > 9) evicts 0.
    read(cache, 10);
    expect([cache.queueOf(0), cache.queueOf(1), cache.queueOf(10)]).toEqual([null, "main", "small"]);
    read(cache, 1); // frequency 1 in main
    readAll(cache, [10, 10]); // 10 reaches the threshold in small
    read(cache, 11); // 10 moves to main (10 > 9 again): main's tail 1 is reinserted (frequency 0), 2 is evicted
    expect([cache.queueOf(1), cache.queueOf(2), cache.queueOf(10), cache.queueOf(11)]).toEqual([
      "main",
      null,
      "main",
      "small",
    ]);
    read(cache, 12); // small's 11 (frequency 0) to the ghost
    expect(cache.queueOf(11)).toBe("ghost");
  });

  test("frequency is capped at 3: four hits in main buy three reinsertions, not four", () => {
    const cache = new S3FifoCache({ capacity: 2, keyCount: 30 }); // small 1, main 1, ghost 1
    readAll(cache, [0, 0, 0]); // frequency 2 in small
    read(cache, 1); // not full yet
    read(cache, 2); // full: 0 moves to main (frequency 0) and small goes on: 1 to the ghost
    expect([cache.queueOf(0), cache.queueOf(1), cache.queueOf(2)]).toEqual(["main", "ghost", "small"]);
    for (let i = 0; i < 4; i++) read(cache, 0); // frequency 3, not 4
    // A cycle: x read three times in small, then a new key: x moves to main (2 > 1), main reinserts 0 with one
    // less and evicts x at frequency 0.
    const cycle = (k: number) => {
      for (let i = 0; i < 3; i++) read(cache, 10 + 2 * k);
      read(cache, 11 + 2 * k);
    };
    for (let k = 0; k < 3; k++) {
      cycle(k);
      expect(cache.queueOf(0)).toBe("main");
    }
    cycle(3);
    expect([cache.queueOf(0), cache.queueOf(16)]).toEqual([null, "main"]);
  });

  test("an invalidation removes the copy and keeps the ghost's history", () => {
    const cache = filled();
    read(cache, 10); // 0 to the ghost
    cache.delete(5);
    cache.delete(0);
    expect([cache.queueOf(5), cache.queueOf(0)]).toEqual([null, "ghost"]);
    expect(read(cache, 5)).toBe(false);
  });
});
