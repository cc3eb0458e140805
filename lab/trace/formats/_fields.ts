/**
 * What the format readers share: a line's result, the operation words, RFC 4180 field splitting and the
 * number checks. Each reader is a pure `(line, lineNumber) => LineResult`; read.ts counts and reports.
 */
import type { TraceOp, TraceRequest } from "../trace.ts";

/**
 * A line that is not a request: `ignored` (blank, comment, header), `unmatched` (an access-log line the
 * route does not select), `bad` (malformed: an error, or counted under skipBadLines) or `fatal` (the rest
 * cannot be read, e.g. a csv header without `key`: an error even under skipBadLines).
 */
export interface LineSkip {
  skip: "ignored" | "unmatched" | "bad" | "fatal";
  why: string;
}
export type LineResult = TraceRequest | LineSkip;
export type LineParser = (line: string, lineNumber: number) => LineResult;

export function isSkip(result: LineResult): result is LineSkip {
  return "skip" in result;
}

export function bad(why: string): LineSkip {
  return { skip: "bad", why };
}

export const BLANK: LineSkip = { skip: "ignored", why: "blank line" };

/** A whitespace-only line: skipped and counted by every format. */
export function isBlank(line: string): boolean {
  return line.length === 0 || line.trim().length === 0;
}

// The words csv and delimited traces use for an operation: cachelab's, memcached's and HTTP's.
const OP_WORDS: Record<string, TraceOp> = {
  read: "read",
  get: "read",
  gets: "read",
  head: "read",
  write: "write",
  set: "write",
  add: "write",
  replace: "write",
  cas: "write",
  append: "write",
  prepend: "write",
  incr: "write",
  decr: "write",
  put: "write",
  post: "write",
  patch: "write",
  delete: "delete",
};
export const OP_WORD_LIST = Object.keys(OP_WORDS).join("|");

/** An operation word, any case, as a TraceOp; null for a word no format knows. */
export function opFromWord(word: string): TraceOp | null {
  return OP_WORDS[word] ?? OP_WORDS[word.toLowerCase()] ?? null;
}

/** Where a line's fields are (0-based), for the formats with columns (csv, delimited). */
export interface FieldColumns {
  key: number;
  op: number | null;
  size: number | null;
  time: number | null;
  timeUnitMs: number;
}

/**
 * A request from a line's fields: the key must be non-empty and the op a known word; an empty size or
 * time is null (this line does not say).
 */
export function requestFromFields(fields: string[], columns: FieldColumns): LineResult {
  const key = fields[columns.key] ?? "";
  if (key.length === 0) return bad("empty key");
  let op: TraceOp = "read";
  if (columns.op !== null) {
    const word = fields[columns.op] ?? "";
    const known = opFromWord(word);
    if (known === null) return bad(`unknown op ${JSON.stringify(word)}; the ops are ${OP_WORD_LIST}`);
    op = known;
  }
  let sizeBytes: number | null = null;
  const sizeText = columns.size === null ? "" : (fields[columns.size] ?? "");
  if (sizeText.length > 0) {
    const size = parseSizeBytes(sizeText);
    if (typeof size === "string") return bad(size);
    sizeBytes = size;
  }
  let tsMs: number | null = null;
  const timeText = columns.time === null ? "" : (fields[columns.time] ?? "");
  if (timeText.length > 0) {
    const time = parseTimeMs(timeText, columns.timeUnitMs);
    if (typeof time === "string") return bad(time);
    tsMs = time;
  }
  return { key, op, sizeBytes, tsMs };
}

/** The largest size a CompactTrace holds (an Int32Array). */
export const MAX_SIZE_BYTES = 2 ** 31 - 1;

/** A size in bytes: digits only, at most MAX_SIZE_BYTES; else why not. */
export function parseSizeBytes(text: string): number | string {
  if (!/^\d+$/.test(text)) return `size is not a whole number of bytes: ${JSON.stringify(text)}`;
  const size = Number(text);
  if (size > MAX_SIZE_BYTES) return `size ${text} is over ${MAX_SIZE_BYTES} bytes`;
  return size;
}

/** A non-negative decimal time in `unitMs` units, as ms; else why not. */
export function parseTimeMs(text: string, unitMs: number): number | string {
  if (!/^\d+(\.\d+)?$/.test(text)) return `time is not a non-negative number: ${JSON.stringify(text)}`;
  return Number(text) * unitMs;
}

/**
 * Splits one line into fields on `delimiter` with RFC 4180 quoting (`"a,b"`, `""` for a quote); a string
 * says why the quoting is malformed. A quoted field cannot span lines: traces are read line by line.
 */
export function splitFields(line: string, delimiter: string): string[] | string {
  if (!line.includes('"')) return line.split(delimiter);
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let field = "";
      let j = i + 1;
      for (;;) {
        const close = line.indexOf('"', j);
        if (close < 0) return `unterminated quoted field from column ${i + 1}`;
        field += line.slice(j, close);
        if (line[close + 1] === '"') {
          field += '"';
          j = close + 2;
          continue;
        }
        i = close + 1;
        break;
      }
      fields.push(field);
      if (i === line.length) return fields;
      if (!line.startsWith(delimiter, i)) return `text after a closing quote at column ${i + 1}`;
      i += delimiter.length;
      continue;
    }
    const next = line.indexOf(delimiter, i);
    const field = next < 0 ? line.slice(i) : line.slice(i, next);
    if (field.includes('"')) return `a quote inside an unquoted field at column ${i + 1}`;
    fields.push(field);
    if (next < 0) return fields;
    i = next + delimiter.length;
  }
}
