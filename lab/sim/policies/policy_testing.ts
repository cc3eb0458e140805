/** What the policy tests share: a seeded request mix that tells recency, frequency and scan resistance apart. */
import { seededRandom } from "../../plan/targets.ts";

export interface MixedTraceOptions {
  requests: number;
  /** Hot keys drawn Zipf(`exponent`) by rank. */
  hotKeys: number;
  exponent: number;
  seed: number;
}

/**
 * Reads only, keys interned in first-seen order (0, 1, …): 75% Zipf draws over the hot keys, 15% keys never
 * seen again (one-hit wonders), 10% starts of a 40-key sequential scan over a pool of 5 000 keys. The
 * libCacheSim figures in lab/trace/testdata were printed for exactly this sequence (ids + 1, one a line).
 */
export function mixedTrace(options: MixedTraceOptions): { keyIndex: Int32Array; keyCount: number } {
  const { requests, hotKeys, exponent } = options;
  const random = seededRandom(options.seed);
  const cumulative = new Float64Array(hotKeys);
  let total = 0;
  for (let rank = 0; rank < hotKeys; rank++) {
    total += 1 / (rank + 1) ** exponent;
    cumulative[rank] = total;
  }
  const scanPool = 5_000;
  let oneHit = hotKeys + scanPool;
  const raw = new Int32Array(requests);
  for (let i = 0; i < requests; ) {
    const pick = random();
    if (pick < 0.75) {
      const target = random() * total;
      let lo = 0;
      let hi = hotKeys - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((cumulative[mid] as number) < target) lo = mid + 1;
        else hi = mid;
      }
      raw[i++] = lo;
    } else if (pick < 0.9) {
      raw[i++] = oneHit++;
    } else {
      const start = Math.floor(random() * scanPool);
      for (let j = 0; j < 40 && i < requests; j++) raw[i++] = hotKeys + ((start + j) % scanPool);
    }
  }
  const interned = new Map<number, number>();
  const keyIndex = new Int32Array(requests);
  for (let i = 0; i < requests; i++) {
    const id = raw[i] as number;
    let key = interned.get(id);
    if (key === undefined) {
      key = interned.size;
      interned.set(id, key);
    }
    keyIndex[i] = key;
  }
  return { keyIndex, keyCount: interned.size };
}
