/**
 * S3-FIFO (Yang et al., SOSP '23) as libCacheSim's `S3FIFO-0.1000-2`, the authors' own implementation: a
 * small FIFO of 10% of the capacity (at least 1 entry), a main FIFO of the rest, a ghost FIFO of keys as large
 * as main, a 2-bit frequency per entry (a hit adds 1, capped at 3). A miss enters small, or main if its key is
 * in the ghost. When full: if main is over its share or small is empty, main evicts (an entry with frequency
 * > 0 is reinserted at the head with frequency − 1); otherwise small evicts its tail, moving it to main with
 * frequency 0 when its frequency is ≥ 2 (and going on), else dropping it to the ghost. Capacity in entries.
 */
import { checkCapacity, type EvictionPolicy, KeyLists, type PolicyOptions } from "./key_lists.ts";

const SMALL = 1;
const MAIN = 2;
const GHOST = 3;
/** libCacheSim's `move-to-main-threshold=2`. */
export const MOVE_TO_MAIN_THRESHOLD = 2;
const MAX_FREQUENCY = 3;

export class S3FifoCache implements EvictionPolicy {
  readonly #capacity: number;
  readonly #mainCapacity: number;
  readonly #ghostCapacity: number;
  readonly #lists: KeyLists;
  readonly #frequency: Uint8Array;

  constructor(options: PolicyOptions) {
    checkCapacity("S3-FIFO", options.capacity);
    this.#capacity = options.capacity;
    const small = Math.max(1, Math.floor(options.capacity / 10));
    this.#mainCapacity = options.capacity - small;
    this.#ghostCapacity = this.#mainCapacity;
    this.#lists = new KeyLists(options.keyCount, 3);
    this.#frequency = new Uint8Array(options.keyCount);
  }

  get(key: number): boolean {
    const where = this.#lists.where[key];
    if (where !== SMALL && where !== MAIN) return false;
    if ((this.#frequency[key] as number) < MAX_FREQUENCY)
      this.#frequency[key] = (this.#frequency[key] as number) + 1;
    return true;
  }

  set(key: number): void {
    const lists = this.#lists;
    // Out of the ghost before evicting, which may push ghost keys out (libCacheSim checks it on lookup).
    const fromGhost = lists.where[key] === GHOST;
    if (fromGhost) lists.remove(key);
    while (lists.size(SMALL) + lists.size(MAIN) >= this.#capacity) this.#evict();
    lists.pushHead(fromGhost ? MAIN : SMALL, key);
    this.#frequency[key] = 0;
  }

  delete(key: number): void {
    const where = this.#lists.where[key];
    if (where === SMALL || where === MAIN) this.#lists.remove(key);
  }

  /** Which queue holds `key`: "small", "main", "ghost" or null, for tests. */
  queueOf(key: number): "small" | "main" | "ghost" | null {
    const where = this.#lists.where[key];
    return where === SMALL ? "small" : where === MAIN ? "main" : where === GHOST ? "ghost" : null;
  }

  #evict(): void {
    const lists = this.#lists;
    if (lists.size(MAIN) > this.#mainCapacity || lists.size(SMALL) === 0) this.#evictMain();
    else this.#evictSmall();
  }

  #evictSmall(): void {
    const lists = this.#lists;
    while (lists.size(SMALL) > 0) {
      const key = lists.popTail(SMALL);
      if ((this.#frequency[key] as number) >= MOVE_TO_MAIN_THRESHOLD) {
        // libCacheSim's main insert starts the moved entry at frequency 0.
        this.#frequency[key] = 0;
        lists.pushHead(MAIN, key);
        continue;
      }
      if (this.#ghostCapacity > 0) {
        if (lists.size(GHOST) >= this.#ghostCapacity) lists.popTail(GHOST);
        lists.pushHead(GHOST, key);
      }
      return;
    }
  }

  #evictMain(): void {
    const lists = this.#lists;
    while (lists.size(MAIN) > 0) {
      const key = lists.popTail(MAIN);
      const frequency = this.#frequency[key] as number;
      if (frequency === 0) return;
      this.#frequency[key] = frequency - 1;
      lists.pushHead(MAIN, key);
    }
  }
}
