/** The eviction policies the miss-ratio curves replay beside LRU, by the name their curve carries. */
import { ArcCache } from "./arc.ts";
import type { EvictionPolicy, PolicyOptions } from "./key_lists.ts";
import { S3FifoCache } from "./s3fifo.ts";
import { SieveCache } from "./sieve.ts";
import { WTinyLfuCache } from "./wtinylfu.ts";

export const POLICY_NAMES = ["sieve", "s3fifo", "wtinylfu", "arc"] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/** How a policy is named in prose and on the card. */
export const POLICY_LABELS: Record<PolicyName, string> = {
  sieve: "SIEVE",
  s3fifo: "S3-FIFO",
  wtinylfu: "W-TinyLFU",
  arc: "ARC",
};

export function createPolicy(name: PolicyName, options: PolicyOptions): EvictionPolicy {
  switch (name) {
    case "sieve":
      return new SieveCache(options);
    case "s3fifo":
      return new S3FifoCache(options);
    case "wtinylfu":
      return new WTinyLfuCache(options);
    case "arc":
      return new ArcCache(options);
  }
}

const READ = 0;

/**
 * Replays `keyIndex`/`op` (a CompactTrace's columns) through `name` at `capacity` entries as cache-aside (a
 * read hits, or loads and fills; a write or delete invalidates), counting the hits (and their bytes, −1 sizes
 * skipped) of the reads at index ≥ `countFrom`. O(requests) time, O(keys) memory.
 */
export function policyHits(
  name: PolicyName,
  columns: { keyIndex: Int32Array; op: Uint8Array; keyCount: number },
  options: { capacity: number; readBytes: Int32Array | null; countFrom?: number },
): [number, number] {
  const { keyIndex, op } = columns;
  const { readBytes } = options;
  const countFrom = options.countFrom ?? 0;
  const policy = createPolicy(name, { capacity: options.capacity, keyCount: columns.keyCount });
  let hits = 0;
  let hitBytes = 0;
  for (let i = 0; i < keyIndex.length; i++) {
    const key = keyIndex[i] as number;
    if (op[i] !== READ) {
      policy.delete(key);
    } else if (policy.get(key)) {
      if (i < countFrom) continue;
      hits++;
      const bytes = readBytes === null ? -1 : (readBytes[i] as number);
      if (bytes > 0) hitBytes += bytes;
    } else {
      policy.set(key);
    }
  }
  return [hits, hitBytes];
}
