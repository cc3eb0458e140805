/**
 * Doubly linked lists of dense integer keys (0 … keyCount − 1) in typed arrays, each key in at most one list:
 * the queues every eviction policy model keeps, allocation-free per request. Head is the newest end.
 */

const NONE = -1;
/** `where` of a key in no list. */
export const ABSENT = 0;

export class KeyLists {
  /** Toward the head (newer); NONE at the head. */
  readonly prev: Int32Array;
  /** Toward the tail (older); NONE at the tail. */
  readonly next: Int32Array;
  /** The list (1 … lists) each key is in, or ABSENT. */
  readonly where: Uint8Array;
  readonly #heads: Int32Array;
  readonly #tails: Int32Array;
  readonly #sizes: Int32Array;

  constructor(keyCount: number, lists: number) {
    if (!(Number.isSafeInteger(keyCount) && keyCount >= 0)) {
      throw new RangeError(`Cannot make key lists: keyCount must be an integer ≥ 0: received ${keyCount}`);
    }
    this.prev = new Int32Array(keyCount);
    this.next = new Int32Array(keyCount);
    this.where = new Uint8Array(keyCount);
    this.#heads = new Int32Array(lists + 1).fill(NONE);
    this.#tails = new Int32Array(lists + 1).fill(NONE);
    this.#sizes = new Int32Array(lists + 1);
  }

  size(list: number): number {
    return this.#sizes[list] as number;
  }

  /** The oldest key of `list`, or −1 when it is empty. */
  tail(list: number): number {
    return this.#tails[list] as number;
  }

  /** The key older than `key` in its list, or −1 at the tail. */
  older(key: number): number {
    return this.next[key] as number;
  }

  /** The key newer than `key` in its list, or −1 at the head. */
  newer(key: number): number {
    return this.prev[key] as number;
  }

  /** Puts `key` (in no list) at the head of `list`. */
  pushHead(list: number, key: number): void {
    const head = this.#heads[list] as number;
    this.prev[key] = NONE;
    this.next[key] = head;
    if (head === NONE) this.#tails[list] = key;
    else this.prev[head] = key;
    this.#heads[list] = key;
    this.where[key] = list;
    this.#sizes[list] = (this.#sizes[list] as number) + 1;
  }

  /** Takes `key` out of whatever list holds it (nothing if none). */
  remove(key: number): void {
    const list = this.where[key] as number;
    if (list === ABSENT) return;
    const before = this.prev[key] as number;
    const after = this.next[key] as number;
    if (before === NONE) this.#heads[list] = after;
    else this.next[before] = after;
    if (after === NONE) this.#tails[list] = before;
    else this.prev[after] = before;
    this.where[key] = ABSENT;
    this.#sizes[list] = (this.#sizes[list] as number) - 1;
  }

  /** Moves `key` from its list (if any) to the head of `list`. */
  moveToHead(list: number, key: number): void {
    this.remove(key);
    this.pushHead(list, key);
  }

  /** Takes the tail of `list` out and returns it; −1 when the list is empty. */
  popTail(list: number): number {
    const key = this.#tails[list] as number;
    if (key !== NONE) this.remove(key);
    return key;
  }
}

/** What every policy model offers, as the simulator's stores (cache_models.ts): presence only, keys dense. */
export interface EvictionPolicy {
  /** A read: whether the key is cached, updating the policy's state for a hit (a miss changes nothing). */
  get(key: number): boolean;
  /** The fill after a miss: inserts `key` (not cached), evicting as the policy does when full. */
  set(key: number): void;
  /** An invalidation: the key's copy, if any, leaves (the policy's history of it stays). */
  delete(key: number): void;
}

/** Options every policy model takes: its capacity in entries and how many distinct keys it will see. */
export interface PolicyOptions {
  capacity: number;
  keyCount: number;
}

/** A RangeError unless `capacity` is a whole number of entries ≥ 1. */
export function checkCapacity(policy: string, capacity: number): void {
  if (!(Number.isSafeInteger(capacity) && capacity >= 1)) {
    throw new RangeError(
      `Cannot model ${policy}: capacity must be an integer ≥ 1 entry: received ${capacity}`,
    );
  }
}
