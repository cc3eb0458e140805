/**
 * SIEVE (Zhang et al., NSDI '24): one FIFO queue, a visited bit per entry and a hand. A hit sets the bit and
 * moves nothing; a miss inserts at the head. To evict, the hand walks from where it last stopped (the tail at
 * first) toward the head, clearing set bits, wrapping to the tail past the head, and evicts the first entry
 * whose bit is clear; it stays at that entry's newer neighbour. Capacity in entries.
 */
import { ABSENT, checkCapacity, type EvictionPolicy, KeyLists, type PolicyOptions } from "./key_lists.ts";

const QUEUE = 1;

export class SieveCache implements EvictionPolicy {
  readonly #capacity: number;
  readonly #lists: KeyLists;
  readonly #visited: Uint8Array;
  /** The next entry the hand examines; −1: start from the tail. */
  #hand = -1;

  constructor(options: PolicyOptions) {
    checkCapacity("SIEVE", options.capacity);
    this.#capacity = options.capacity;
    this.#lists = new KeyLists(options.keyCount, 1);
    this.#visited = new Uint8Array(options.keyCount);
  }

  get(key: number): boolean {
    if (this.#lists.where[key] === ABSENT) return false;
    this.#visited[key] = 1;
    return true;
  }

  set(key: number): void {
    if (this.#lists.size(QUEUE) >= this.#capacity) this.#evict();
    this.#lists.pushHead(QUEUE, key);
    this.#visited[key] = 0;
  }

  delete(key: number): void {
    if (this.#lists.where[key] === ABSENT) return;
    if (key === this.#hand) this.#hand = this.#lists.newer(key);
    this.#lists.remove(key);
  }

  /** Where the hand points (−1: the tail), for tests. */
  get hand(): number {
    return this.#hand;
  }

  /** Whether `key`'s visited bit is set, for tests. */
  visited(key: number): boolean {
    return this.#visited[key] === 1;
  }

  #evict(): void {
    const lists = this.#lists;
    let key = this.#hand === -1 ? lists.tail(QUEUE) : this.#hand;
    while (this.#visited[key] === 1) {
      this.#visited[key] = 0;
      const newer = lists.newer(key);
      key = newer === -1 ? lists.tail(QUEUE) : newer;
    }
    this.#hand = lists.newer(key);
    lists.remove(key);
  }
}
