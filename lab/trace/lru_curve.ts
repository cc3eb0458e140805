/**
 * Exact LRU hits at many capacities in one pass, with invalidations. Without them LRU is a stack algorithm
 * (Mattson et al. 1970): a read hits at capacity C iff its stack distance d (distinct live keys read since
 * its key's last read) is < C. An invalidation (write or delete) breaks that: an LRU of size C that loses a
 * resident key holds C − 1 keys, and the key the stack now puts at position C − 1 was evicted long ago.
 * What survives is that the cache of every size is still a prefix of the recency list of live keys, of a
 * length L_C ≤ C of its own; so one pass keeps one L_C per capacity (proof: docs/trace_statistics.md).
 */
import { RecencyMarks } from "./fenwick.ts";

const READ = 0;
/** A key with no live stack entry: never read, or invalidated since its last read. */
const COLD = Number.POSITIVE_INFINITY;

export interface CapacityHits {
  /** Per capacity, the reads that hit. */
  hits: Float64Array;
  /** Per capacity, Σ readBytes of the reads that hit (−1 sizes skipped). */
  hitBytes: Float64Array;
}

/**
 * LRU's hits at each capacity (entries) over the requests: a read hits or inserts its key at the front, a
 * write or delete removes the key. `readBytes` (−1: unknown) weighs the byte hits.
 */
export function lruHits(
  keyIndex: Int32Array,
  op: Uint8Array,
  options: { keyCount: number; capacities: readonly number[]; readBytes: Int32Array | null },
): CapacityHits {
  const { capacities, readBytes } = options;
  const n = keyIndex.length;
  const sizes = capacities.length;
  const capacity = Float64Array.from(capacities);
  // L_C: how many of the most recently read live keys the cache of capacity C holds.
  const prefix = new Float64Array(sizes);
  const hits = new Float64Array(sizes);
  const hitBytes = new Float64Array(sizes);
  const marks = new RecencyMarks(options.keyCount);
  for (let i = 0; i < n; i++) {
    const key = keyIndex[i] as number;
    const live = marks.distance(key);
    const distance = live < 0 ? COLD : live;
    if (op[i] === READ) {
      const bytes = readBytes === null ? -1 : (readBytes[i] as number);
      for (let s = 0; s < sizes; s++) {
        if (distance < (prefix[s] as number)) {
          hits[s] = (hits[s] as number) + 1;
          if (bytes > 0) hitBytes[s] = (hitBytes[s] as number) + bytes;
        } else if ((prefix[s] as number) < (capacity[s] as number)) {
          prefix[s] = (prefix[s] as number) + 1; // a free slot takes the insert; otherwise the prefix's last key is evicted
        }
      }
      marks.touch(key);
    } else {
      // The invalidated key leaves every cache whose prefix holds it, and the recency list.
      for (let s = 0; s < sizes; s++)
        if (distance < (prefix[s] as number)) prefix[s] = (prefix[s] as number) - 1;
      marks.remove(key);
    }
  }
  return { hits, hitBytes };
}
