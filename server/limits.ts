/**
 * What the server accepts from a client, bounded so that no request can make it hold, store or serve more
 * than a product's worth: the body size (Bun answers 413 before any handler), a name's length and
 * characters, and the list parameters (each distinct page is a cache entry); and the parsers that hold
 * ids and PUT bodies to them.
 */
import { CATEGORY_COUNT } from "../seed/schema.ts";
import { MAX_INT4 } from "../server_config.ts";

/** Largest request body: a PUT of three fields needs a few hundred bytes (Bun's default is 128 MiB). */
export const MAX_REQUEST_BODY_BYTES = 8 * 1024;

/** Longest product name, in characters (code points). */
export const NAME_MAX_CHARS = 200;

/** The categories the seed creates: a list of any other is empty, and would still make a cache entry. */
export const CATEGORY_MAX = CATEGORY_COUNT;

/** Highest list page: 10 000 × 100 rows is far past any category's end (the lab reads pages 0..9). */
export const PAGE_MAX = 10_000;

// General category Cc: C0, DEL and C1 (NUL among them: Postgres text cannot hold it).
const CONTROL_CHARACTERS = /\p{Cc}/u;

/** Why `value` cannot be a product name, or null when it can. */
export function nameProblem(value: unknown): string | null {
  if (typeof value !== "string" || value.trim() === "") return "name must be a non-empty string";
  if (value.length > NAME_MAX_CHARS && [...value].length > NAME_MAX_CHARS) {
    return `name must be at most ${NAME_MAX_CHARS} characters: received ${[...value].length}`;
  }
  if (CONTROL_CHARACTERS.test(value))
    return "name must not contain control characters (U+0000–U+001F, U+007F–U+009F)";
  // A lone surrogate is no character: UTF-8 cannot encode it.
  if (!value.isWellFormed()) return "name must be well-formed Unicode (no lone surrogates)";
  return null;
}

/** Parses a path or query integer; `null` unless it is a canonical decimal in min..max. */
export function parseId(raw: string | undefined, min: number, max: number): number | null {
  // By hand, not /^(0|[1-9]\d{0,9})$/: the regex was 4% of a local hit's time in-process.
  if (raw === undefined || raw.length === 0 || raw.length > 10 || (raw.length > 1 && raw[0] === "0"))
    return null;
  let value = 0;
  for (let i = 0; i < raw.length; i++) {
    const digit = raw.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return null;
    value = value * 10 + digit;
  }
  return value >= min && value <= max ? value : null;
}

const UPDATE_FIELDS = new Set(["priceCents", "stock", "name"]);
export type ProductUpdate = { priceCents?: number; stock?: number; name?: string };

/** Validates a PUT body; returns the update or a message saying what is wrong. */
export function parseUpdate(body: unknown): ProductUpdate | string {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "body must be a JSON object";
  const entries = Object.entries(body);
  if (entries.length === 0) return "body must set at least one of priceCents, stock, name";
  const update: ProductUpdate = {};
  for (const [field, value] of entries) {
    if (!UPDATE_FIELDS.has(field))
      return `unknown field ${JSON.stringify(field)}: expected priceCents, stock, name`;
    if (field === "name") {
      const problem = nameProblem(value);
      if (problem !== null) return problem;
      update.name = value as string;
    } else {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_INT4) {
        return `${field} must be an integer in 0..${MAX_INT4}`;
      }
      update[field as "priceCents" | "stock"] = value as number;
    }
  }
  return update;
}

/** GET /products's query, or the problem with it (an unknown parameter, a value out of range). */
export function parseListQuery(
  query: Record<string, string | undefined>,
): { category: number; page: number; size: number } | string {
  for (const name of Object.keys(query)) {
    if (name !== "category" && name !== "page" && name !== "size") return `unknown parameter ${name}`;
  }
  const category = parseId(query.category, 1, CATEGORY_MAX);
  const page = query.page === undefined ? 0 : parseId(query.page, 0, PAGE_MAX);
  const size = query.size === undefined ? 20 : parseId(query.size, 1, 100);
  if (category === null) return `category must be an integer in 1..${CATEGORY_MAX}`;
  if (page === null) return `page must be an integer in 0..${PAGE_MAX}`;
  if (size === null) return "size must be an integer in 1..100";
  return { category, page, size };
}
