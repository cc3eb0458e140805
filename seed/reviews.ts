/**
 * The seeded `reviews` of each product: review k of product p depends only on (p, k, seed), like a product
 * row, so any chunk of products can be generated on its own and the COPY text is the same on every machine.
 * They make a miss cost what a join and aggregates cost (GET /products/:id/summary), never a sleep.
 */
import { BASE_EPOCH_MS, makeCorpus, mix32 } from "./seed_text.ts";

/** The most reviews a plan may seed in all (rows × reviewsPerProduct): about 2 GB of table on disk. */
export const REVIEWS_TOTAL_MAX = 20_000_000;
export const REVIEW_BODY_MIN_CHARS = 40;
export const REVIEW_BODY_MAX_CHARS = 199;

export const REVIEW_COPY_COLUMNS = "product_id, id, rating, body, created_at";

/** The corpus review bodies are cut from (apart from descriptions', so sizing products never moves them). */
export function reviewCorpus(seed: number): string {
  return makeCorpus(seed ^ 0x5bd1e995, 16_384);
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/**
 * `created_at` of review k of product p: k hours after the base plus p mod 3 600 seconds, so the latest
 * reviews are the highest ids; printed as Postgres prints a timestamptz under TimeZone=UTC.
 */
function createdAtText(productId: number, k: number): string {
  const date = new Date(BASE_EPOCH_MS + (k * 3_600 + (productId % 3_600)) * 1_000);
  return `${date.getUTCFullYear()}-${pad2(date.getUTCMonth() + 1)}-${pad2(date.getUTCDate())} ${pad2(date.getUTCHours())}:${pad2(date.getUTCMinutes())}:${pad2(date.getUTCSeconds())}+00`;
}

/** Reviews 1..perProduct of products fromId..toId (inclusive) in COPY text format, one line each. */
export function reviewsCopyText(
  plan: { seed: number; reviewsPerProduct: number },
  fromId: number,
  toId: number,
  corpus = reviewCorpus(plan.seed),
): string {
  const lines: string[] = [];
  const span = corpus.length - REVIEW_BODY_MAX_CHARS;
  const spread = REVIEW_BODY_MAX_CHARS - REVIEW_BODY_MIN_CHARS + 1;
  for (let productId = fromId; productId <= toId; productId++) {
    const ph = mix32(Math.imul(plan.seed ^ 0x27d4eb2f, 0x9e3779b1) ^ productId);
    for (let k = 1; k <= plan.reviewsPerProduct; k++) {
      const h = mix32(ph ^ Math.imul(k, 0x85ebca6b));
      // Skewed towards the high ratings, as shops' are: 5 and 4 take 3/4 of them.
      const draw = h % 100;
      const rating = draw < 45 ? 5 : draw < 75 ? 4 : draw < 87 ? 3 : draw < 94 ? 2 : 1;
      const length = REVIEW_BODY_MIN_CHARS + (mix32(h + 1) % spread);
      const offset = mix32(h + 2) % span;
      const body = corpus.slice(offset, offset + length);
      lines.push(`${productId}\t${k}\t${rating}\t${body}\t${createdAtText(productId, k)}\n`);
    }
  }
  return lines.join("");
}
