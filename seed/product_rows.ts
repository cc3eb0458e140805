/**
 * What a seed plan is, and the product rows it makes: row N depends only on (N, seed, descriptionBytes, its
 * payload size), in COPY text format, any chunk generated on its own.
 */
import { checkPayloadProfile, type PayloadProfile, payloadBytesMax, payloadBytesOf } from "./payload.ts";
import { REVIEWS_TOTAL_MAX } from "./reviews.ts";
import { CATEGORY_COUNT } from "./schema.ts";
import { BASE_EPOCH_MS, LONGEST_WORD, makeCorpus, mix32, word } from "./seed_text.ts";

export interface SeedPlan {
  rows: number;
  seed: number;
  descriptionBytes: number;
  /** Reviews of each product (seed/reviews.ts); 0 or absent: none, the dataset and checksum of before. */
  reviewsPerProduct?: number;
  /** Each row's JSON body size (seed/payload.ts); absent: every description is descriptionBytes long. */
  payloadBytes?: PayloadProfile;
}

export const DEFAULT_SEED_PLAN: SeedPlan = { rows: 100_000, seed: 42, descriptionBytes: 200 };

/** Validates a plan; throws RangeError naming the bad field. */
export function checkSeedPlan(plan: SeedPlan): SeedPlan {
  const limits: [keyof SeedPlan, number, number][] = [
    ["rows", 1, 10_000_000],
    ["seed", 0, 2 ** 31 - 1],
    ["descriptionBytes", 0, 1_000_000],
  ];
  const reviews = plan.reviewsPerProduct ?? 0;
  for (const [field, min, max] of [
    ...limits,
    ["reviewsPerProduct", 0, Math.floor(REVIEWS_TOTAL_MAX / Math.max(1, plan.rows))] as const,
  ]) {
    const value = field === "reviewsPerProduct" ? reviews : plan[field];
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
      const why = field === "reviewsPerProduct" ? ` (${REVIEWS_TOTAL_MAX} reviews in all)` : "";
      throw new RangeError(
        `Cannot seed: ${field} must be an integer in ${min}..${max}${why}: received ${String(value)}`,
      );
    }
  }
  if (plan.payloadBytes !== undefined) checkPayloadProfile(plan.payloadBytes, plan.rows);
  return plan;
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/**
 * `updated_at` of row `id` (base + id seconds) written exactly as Postgres prints a timestamptz in UTC, so
 * `COPY … TO STDOUT` under TimeZone=UTC gives back the bytes that were loaded.
 */
function timestampText(id: number, days: Map<number, string>): string {
  const day = Math.floor(id / 86_400);
  let date = days.get(day);
  if (date === undefined) {
    date = new Date(BASE_EPOCH_MS + day * 86_400_000).toISOString().slice(0, 10);
    days.set(day, date);
  }
  const second = id % 86_400;
  return `${date} ${pad2(Math.floor(second / 3_600))}:${pad2(Math.floor(second / 60) % 60)}:${pad2(second % 60)}+00`;
}

function rowHash(plan: SeedPlan, id: number): number {
  return mix32(Math.imul(plan.seed, 0x9e3779b1) ^ id);
}

/** The category of seeded row `id` (rows never change category: a PUT cannot set it). */
export function categoryOf(plan: SeedPlan, id: number): number {
  return 1 + (mix32(rowHash(plan, id) + 1) % CATEGORY_COUNT);
}

/** Rows fromId..toId (inclusive) in COPY text format, one line each. */
export function copyText(
  plan: SeedPlan,
  fromId: number,
  toId: number,
  corpus = makeCorpus(plan.seed, corpusChars(plan)),
): string {
  const lines: string[] = [];
  const days = new Map<number, string>();
  for (let id = fromId; id <= toId; id++) {
    const h = rowHash(plan, id);
    const h2 = mix32(h + 1);
    const name = `${word(h)} ${word(h2 >>> 8)} ${id}`;
    const categoryId = 1 + (h2 % CATEGORY_COUNT);
    const priceCents = 100 + (mix32(h + 2) % 99_901);
    const stock = mix32(h + 3) % 1_001;
    const bodyBytes = payloadBytesOf(plan.payloadBytes, id);
    // A sized row's description is what its body needs beyond the other fields (all ASCII, none escaped).
    const descriptionBytes =
      bodyBytes === null
        ? plan.descriptionBytes
        : Math.max(0, bodyBytes - bodyOverheadBytes(id, name, categoryId, priceCents, stock));
    const offset = mix32(h + 4) % (corpus.length - descriptionBytes);
    const description = corpus.slice(offset, offset + descriptionBytes);
    lines.push(
      `${id}\t${name}\t${categoryId}\t${priceCents}\t${stock}\t${description}\t1\t${timestampText(id, days)}\n`,
    );
  }
  return lines.join("");
}

/**
 * The bytes of row `id`'s JSON body (server.ts productJson) with an empty description, as seeded (version 1,
 * a 24-character updatedAt).
 */
function bodyOverheadBytes(id: number, name: string, categoryId: number, priceCents: number, stock: number) {
  return `{"id":${id},"name":"${name}","categoryId":${categoryId},"priceCents":${priceCents},"stock":${stock},"description":"","version":1,"updatedAt":"2024-01-01T00:00:00.000Z"}`
    .length;
}

/**
 * The smallest body size every row of a seed of `rows` rows can be given exactly: a row's body with an empty
 * description at its other fields' longest (the longest words, the most digits). Below it some rows' bodies
 * are longer than asked (seed/payload.ts).
 */
export function bodyBytesFloor(rows: number): number {
  const id = Math.max(1, rows);
  return bodyOverheadBytes(id, `${LONGEST_WORD} ${LONGEST_WORD} ${id}`, CATEGORY_COUNT, 100_000, 1_000);
}

export function corpusChars(plan: SeedPlan): number {
  return 65_536 + 4 * Math.max(plan.descriptionBytes, payloadBytesMax(plan.payloadBytes));
}

/** Rows in the COPY chunk starting at `fromId`: 5 000, or fewer so a chunk of sized rows stays about 8 MB. */
export function chunkRows(plan: SeedPlan, fromId: number): number {
  const most = Math.min(5_000, plan.rows - fromId + 1);
  if (plan.payloadBytes === undefined) return most;
  let bytes = 0;
  for (let n = 1; n <= most; n++) {
    bytes += payloadBytesOf(plan.payloadBytes, fromId + n - 1) ?? plan.descriptionBytes;
    if (bytes >= 8_000_000) return n;
  }
  return most;
}
