/** The seeder's stateless text primitives: a hash any row can be generated from, words, and a corpus. */
const WORDS = (
  "alpha amber anchor apple arch atlas autumn basil beacon birch blaze bloom bolt breeze brick bronze " +
  "cable canyon cedar chalk cider cloud cobalt comet copper coral cotton crest crystal delta dune ember " +
  "fable falcon fern flint forge frost garnet glacier granite harbor hazel indigo iron ivory jade juniper " +
  "kelp lantern lava linen lotus maple marble meadow mesa mint moss nectar nova oak ocean onyx orbit " +
  "pearl pepper pine plume prism quartz quill raven reef ridge river ruby saffron sage sand slate spark " +
  "spruce stone storm summit thistle tide timber topaz tulip umber velvet violet willow wind zephyr"
).split(" ");
/** The longest of the words names are made of (a body's largest fixed part, seed/product_rows.ts). */
export const LONGEST_WORD = WORDS.reduce((longest, w) => (w.length > longest.length ? w : longest), "");
export const BASE_EPOCH_MS = Date.UTC(2024, 0, 1);

/** A 32-bit integer finalizer (lowbias32); stateless, so any row can be generated independently. */
export function mix32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

export function word(h: number): string {
  return WORDS[h % WORDS.length] as string;
}

/** A seed-dependent ASCII text that descriptions are cut from (no tab, newline or backslash: COPY-safe). */
export function makeCorpus(seed: number, minChars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < minChars; i++) {
    const w = word(mix32(seed ^ Math.imul(i + 1, 0x9e3779b1)));
    parts.push(w);
    length += w.length + 1;
  }
  return parts.join(" ");
}
