/**
 * The recency of live keys as a Fenwick (binary indexed) tree of 0/1 marks over time slots, one per key at
 * its latest request: the stack distance of a request is the marks after its key's slot (Mattson et al. 1970),
 * in O(log T). The slots are renumbered in order when they run out, so T stays 2·keys + 64 whatever the
 * trace's length: a tree that fits in cache, and an amortized O(1) renumbering per request.
 */
export class RecencyMarks {
  readonly #tree: Int32Array;
  /** Per slot, the key marked there (valid while that key's `#slot` points back). */
  readonly #keyAt: Int32Array;
  /** Per key, its slot, or −1 when it is not live. */
  readonly #slot: Int32Array;
  #next = 0;
  #live = 0;

  constructor(keyCount: number) {
    const slots = 2 * keyCount + 64;
    this.#tree = new Int32Array(slots + 1);
    this.#keyAt = new Int32Array(slots);
    this.#slot = new Int32Array(keyCount).fill(-1);
  }

  /** The live keys marked after `key`'s mark (its stack distance), or −1 if `key` is not live. */
  distance(key: number): number {
    const slot = this.#slot[key] as number;
    if (slot < 0) return -1;
    const tree = this.#tree;
    let before = 0;
    for (let i = slot + 1; i > 0; i -= i & -i) before += tree[i] as number;
    return this.#live - before;
  }

  /** Makes `key` the most recent live key. */
  touch(key: number): void {
    this.remove(key);
    if (this.#next === this.#keyAt.length) this.#renumber();
    const slot = this.#next++;
    this.#keyAt[slot] = key;
    this.#slot[key] = slot;
    this.#add(slot, 1);
    this.#live++;
  }

  /** Ends `key`'s mark (an invalidation): it is no longer live. */
  remove(key: number): void {
    const slot = this.#slot[key] as number;
    if (slot < 0) return;
    this.#add(slot, -1);
    this.#slot[key] = -1;
    this.#live--;
  }

  #add(slot: number, delta: number): void {
    const tree = this.#tree;
    for (let i = slot + 1; i < tree.length; i += i & -i) tree[i] = (tree[i] as number) + delta;
  }

  /** Moves the live marks, in order, to slots 0 … live − 1 and rebuilds the tree in O(T). */
  #renumber(): void {
    const tree = this.#tree;
    tree.fill(0);
    let next = 0;
    for (let slot = 0; slot < this.#next; slot++) {
      const key = this.#keyAt[slot] as number;
      if (this.#slot[key] !== slot) continue;
      this.#keyAt[next] = key;
      this.#slot[key] = next;
      tree[next + 1] = 1;
      next++;
    }
    for (let i = 1; i < tree.length; i++) {
      const parent = i + (i & -i);
      if (parent < tree.length) tree[parent] = (tree[parent] as number) + (tree[i] as number);
    }
    this.#next = next;
  }
}
