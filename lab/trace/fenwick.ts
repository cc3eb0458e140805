/**
 * A Fenwick (binary indexed) tree of 0/1 marks over request positions: the stack distance of a request is the
 * number of keys whose latest access lies after its key's previous one (Mattson et al. 1970), in O(log n).
 */
export class PositionMarks {
  readonly #tree: Int32Array;
  /** Marks set in all. */
  total = 0;

  constructor(positions: number) {
    this.#tree = new Int32Array(positions + 1);
  }

  /** Sets (delta 1) or clears (delta −1) the mark at `position`. */
  add(position: number, delta: number): void {
    const tree = this.#tree;
    for (let i = position + 1; i < tree.length; i += i & -i) tree[i] = (tree[i] as number) + delta;
    this.total += delta;
  }

  /** Marks set at positions after `position`. */
  after(position: number): number {
    const tree = this.#tree;
    let sum = 0;
    for (let i = position + 1; i > 0; i -= i & -i) sum += tree[i] as number;
    return this.total - sum;
  }
}
