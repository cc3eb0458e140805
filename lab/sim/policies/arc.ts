/**
 * ARC (Megiddo & Modha, FAST '03): T1 (seen once recently) and T2 (seen at least twice) hold the entries, B1
 * and B2 the keys they last evicted, and p is T1's target size. A hit in T1 or T2 moves the key to T2's head.
 * A miss in B1 raises p by max(|B2|/|B1|, 1), one in B2 lowers it by max(|B1|/|B2|, 1) (p stays in [0, c]),
 * and the key enters T2; any other miss enters T1. When full, REPLACE evicts T1's LRU into B1 if T1 is
 * non-empty and above p (or at p on a B2 miss), or T2 is empty; else T2's LRU into B2. On a miss in neither
 * ghost, |T1|+|B1| = c drops B1's LRU (or, B1 empty, evicts T1's LRU with no ghost) and |T1|+|T2|+|B1|+|B2|
 * = 2c drops B2's LRU: the paper's case IV, as libCacheSim's ARC.c. Capacity c in entries.
 */
import { checkCapacity, type EvictionPolicy, KeyLists, type PolicyOptions } from "./key_lists.ts";

const T1 = 1;
const T2 = 2;
const B1 = 3;
const B2 = 4;

export class ArcCache implements EvictionPolicy {
  readonly #capacity: number;
  readonly #lists: KeyLists;
  #p = 0;

  constructor(options: PolicyOptions) {
    checkCapacity("ARC", options.capacity);
    this.#capacity = options.capacity;
    this.#lists = new KeyLists(options.keyCount, 4);
  }

  get(key: number): boolean {
    const where = this.#lists.where[key];
    if (where !== T1 && where !== T2) return false;
    this.#lists.moveToHead(T2, key);
    return true;
  }

  set(key: number): void {
    const lists = this.#lists;
    const c = this.#capacity;
    const full = lists.size(T1) + lists.size(T2) >= c;
    const where = lists.where[key];
    if (where === B1 || where === B2) {
      const inB2 = where === B2;
      const b1 = lists.size(B1);
      const b2 = lists.size(B2);
      this.#p = inB2
        ? Math.max(this.#p - Math.max(b1 / b2, 1), 0)
        : Math.min(this.#p + Math.max(b2 / b1, 1), c);
      lists.remove(key);
      if (full) this.#replace(inB2);
      lists.pushHead(T2, key);
      return;
    }
    if (lists.size(T1) + lists.size(B1) >= c) {
      if (lists.size(B1) > 0) {
        lists.popTail(B1);
        if (full) this.#replace(false);
      } else {
        lists.popTail(T1);
      }
    } else {
      const directory = lists.size(T1) + lists.size(T2) + lists.size(B1) + lists.size(B2);
      if (directory >= 2 * c && lists.size(B2) > 0) lists.popTail(B2);
      if (full) this.#replace(false);
    }
    lists.pushHead(T1, key);
  }

  delete(key: number): void {
    const where = this.#lists.where[key];
    if (where === T1 || where === T2) this.#lists.remove(key);
  }

  /** T1's target size p, for tests. */
  get p(): number {
    return this.#p;
  }

  /** Which list holds `key`: "t1", "t2", "b1", "b2" or null, for tests. */
  listOf(key: number): "t1" | "t2" | "b1" | "b2" | null {
    return ([null, "t1", "t2", "b1", "b2"] as const)[this.#lists.where[key] as number] ?? null;
  }

  #replace(inB2: boolean): void {
    const lists = this.#lists;
    const t1 = lists.size(T1);
    if ((t1 > 0 && (t1 > this.#p || (inB2 && t1 === this.#p))) || lists.size(T2) === 0) {
      lists.pushHead(B1, lists.popTail(T1));
    } else {
      lists.pushHead(B2, lists.popTail(T2));
    }
  }
}
