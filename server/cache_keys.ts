/**
 * The cache key of a product or its summary, made once per id below KEPT_KEY_IDS: a key built per request is
 * a new string that the cache's Map must hash again (~85 ns of a local hit in process, docs/benchmarks.md).
 * Two arrays of 2^17 slots (1 MiB each), above the seeded ids; larger ids get a key made per request.
 */
export type KeyKind = "product" | "summary";

const KEPT_KEY_IDS = 1 << 17;
const kept: Record<KeyKind, (string | undefined)[]> = {
  product: new Array(KEPT_KEY_IDS).fill(undefined),
  summary: new Array(KEPT_KEY_IDS).fill(undefined),
};

export function cacheKey(kind: KeyKind, id: number): string {
  if (id >= KEPT_KEY_IDS) return `${kind}:${id}`;
  const keys = kept[kind];
  let key = keys[id];
  if (key === undefined) {
    key = `${kind}:${id}`;
    keys[id] = key;
  }
  return key;
}
