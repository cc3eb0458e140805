/**
 * What the server accepts from a client, bounded so that no request can make it hold, store or serve more
 * than a product's worth: the body size (Bun answers 413 before any handler), a name's length and
 * characters, and the list parameters (each distinct page is a cache entry).
 */
import { CATEGORY_COUNT } from "../seed/schema.ts";

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
