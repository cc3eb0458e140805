/**
 * W-TinyLFU (Einziger, Friedman, Manes, ACM ToS 2017) as Caffeine lays it out, with a fixed window: an LRU
 * window of 1% of the capacity (capacity − ⌊0.99·capacity⌋, so at least 1 entry) and an SLRU main of the rest,
 * 20% probation / 80% protected (protected = ⌊0.8·main⌋). A miss enters the window; the window's LRU, pushed
 * out, becomes a candidate at probation's head, and when the cache is over capacity it is admitted only if its
 * estimated frequency beats that of main's victim (probation's LRU, else protected's), which is evicted; else
 * the candidate is. A probation hit moves to protected, whose overflow goes back to probation's head.
 * Frequencies: a count-min sketch (4 rows of 4-bit counters, each row nextPow2(capacity) wide) behind a
 * doorkeeper bloom filter (a key's first sighting sets its bits; later ones count in the sketch; the estimate
 * adds 1 for a doorkeeper hit). Every read counts once; after 10·capacity reads every counter halves and the
 * doorkeeper clears. Unlike Caffeine, no hill-climbed window and no random admission (hash-flooding defence):
 * the model is deterministic. Capacity in entries.
 */
import { checkCapacity, type EvictionPolicy, KeyLists, type PolicyOptions } from "./key_lists.ts";

const WINDOW = 1;
const PROBATION = 2;
const PROTECTED = 3;
const ROWS = 4;
const MAX_COUNT = 15;
const ROW_SEEDS = [0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f] as const;
const DOORKEEPER_SEEDS = [0x165667b1, 0xd3a2646c] as const;

/** murmur3's 32-bit finaliser over key ⊕ seed: the sketch's row and doorkeeper hashes. */
function mix(key: number, seed: number): number {
  let h = Math.imul(key ^ seed, 0x9e3779b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** The frequency sketch: count-min with a doorkeeper, halved every `sampleSize` additions. */
export class FrequencySketch {
  readonly #counters: Uint8Array;
  readonly #widthMask: number;
  readonly #doorkeeper: Uint8Array;
  readonly #doorkeeperMask: number;
  readonly #sampleSize: number;
  #additions = 0;

  constructor(capacity: number) {
    const width = nextPowerOfTwo(Math.max(16, capacity));
    this.#counters = new Uint8Array(ROWS * width);
    this.#widthMask = width - 1;
    const doorkeeperBits = nextPowerOfTwo(Math.max(64, 16 * capacity));
    this.#doorkeeper = new Uint8Array(doorkeeperBits / 8);
    this.#doorkeeperMask = doorkeeperBits - 1;
    this.#sampleSize = 10 * capacity;
  }

  /** Counts one sighting of `key`. */
  increment(key: number): void {
    if (!this.#admitToDoorkeeper(key)) {
      for (let row = 0; row < ROWS; row++) {
        const at = row * (this.#widthMask + 1) + (mix(key, ROW_SEEDS[row] as number) & this.#widthMask);
        if ((this.#counters[at] as number) < MAX_COUNT)
          this.#counters[at] = (this.#counters[at] as number) + 1;
      }
    }
    if (++this.#additions >= this.#sampleSize) this.#reset();
  }

  /** The estimated sightings of `key` since the last halving (roughly). */
  frequency(key: number): number {
    let min = MAX_COUNT;
    for (let row = 0; row < ROWS; row++) {
      const at = row * (this.#widthMask + 1) + (mix(key, ROW_SEEDS[row] as number) & this.#widthMask);
      min = Math.min(min, this.#counters[at] as number);
    }
    return min + (this.#inDoorkeeper(key) ? 1 : 0);
  }

  #inDoorkeeper(key: number): boolean {
    for (let i = 0; i < DOORKEEPER_SEEDS.length; i++) {
      const bit = mix(key, DOORKEEPER_SEEDS[i] as number) & this.#doorkeeperMask;
      if (((this.#doorkeeper[bit >>> 3] as number) & (1 << (bit & 7))) === 0) return false;
    }
    return true;
  }

  /** Sets `key`'s doorkeeper bits; whether any was clear (a first sighting). */
  #admitToDoorkeeper(key: number): boolean {
    let added = false;
    for (let i = 0; i < DOORKEEPER_SEEDS.length; i++) {
      const bit = mix(key, DOORKEEPER_SEEDS[i] as number) & this.#doorkeeperMask;
      const byte = bit >>> 3;
      const mask = 1 << (bit & 7);
      if (((this.#doorkeeper[byte] as number) & mask) === 0) {
        this.#doorkeeper[byte] = (this.#doorkeeper[byte] as number) | mask;
        added = true;
      }
    }
    return added;
  }

  #reset(): void {
    for (let i = 0; i < this.#counters.length; i++) this.#counters[i] = (this.#counters[i] as number) >>> 1;
    this.#doorkeeper.fill(0);
    this.#additions = 0;
  }
}

export class WTinyLfuCache implements EvictionPolicy {
  readonly #capacity: number;
  readonly #windowCapacity: number;
  readonly #protectedCapacity: number;
  readonly #lists: KeyLists;
  readonly sketch: FrequencySketch;

  constructor(options: PolicyOptions) {
    checkCapacity("W-TinyLFU", options.capacity);
    this.#capacity = options.capacity;
    this.#windowCapacity = options.capacity - Math.floor(0.99 * options.capacity);
    this.#protectedCapacity = Math.floor(0.8 * (options.capacity - this.#windowCapacity));
    this.#lists = new KeyLists(options.keyCount, 3);
    this.sketch = new FrequencySketch(options.capacity);
  }

  get(key: number): boolean {
    const lists = this.#lists;
    const where = lists.where[key];
    this.sketch.increment(key);
    if (where === WINDOW) {
      lists.moveToHead(WINDOW, key);
    } else if (where === PROBATION) {
      lists.moveToHead(PROTECTED, key);
      if (lists.size(PROTECTED) > this.#protectedCapacity)
        lists.pushHead(PROBATION, lists.popTail(PROTECTED));
    } else if (where === PROTECTED) {
      lists.moveToHead(PROTECTED, key);
    } else {
      return false;
    }
    return true;
  }

  set(key: number): void {
    const lists = this.#lists;
    lists.pushHead(WINDOW, key);
    let candidate = -1;
    if (lists.size(WINDOW) > this.#windowCapacity) {
      candidate = lists.popTail(WINDOW);
      lists.pushHead(PROBATION, candidate);
    }
    while (lists.size(WINDOW) + lists.size(PROBATION) + lists.size(PROTECTED) > this.#capacity) {
      let victim = lists.tail(PROBATION);
      if (victim === candidate) victim = lists.tail(PROTECTED);
      if (candidate === -1 || victim === -1) {
        lists.remove(candidate !== -1 ? candidate : victim !== -1 ? victim : lists.tail(WINDOW));
      } else if (this.sketch.frequency(candidate) > this.sketch.frequency(victim)) {
        lists.remove(victim);
      } else {
        lists.remove(candidate);
      }
      candidate = -1;
    }
  }

  delete(key: number): void {
    this.#lists.remove(key);
  }

  /** Which segment holds `key`: "window", "probation", "protected" or null, for tests. */
  segmentOf(key: number): "window" | "probation" | "protected" | null {
    return ([null, "window", "probation", "protected"] as const)[this.#lists.where[key] as number] ?? null;
  }
}
