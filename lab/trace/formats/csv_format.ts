/**
 * `csv`: cachelab's own trace, RFC 4180, with a header naming its columns: `key` (required), one of `ts_ms`
 * or `ts_s` (optional: the request's time), `op` (optional: get/set/delete, an HTTP method or
 * read/write/delete; all reads without it) and `size` (optional: the value's bytes). An empty `ts_*` or
 * `size` field is null (the row does not say); an empty key or op is a bad line.
 */
import {
  BLANK,
  bad,
  type FieldColumns,
  isBlank,
  type LineParser,
  type LineSkip,
  requestFromFields,
  splitFields,
} from "./_fields.ts";

export const CSV_COLUMNS = ["ts_ms", "ts_s", "key", "op", "size"] as const;
type CsvColumn = (typeof CSV_COLUMNS)[number];

interface Layout extends FieldColumns {
  width: number;
}

const HEADER: LineSkip = { skip: "ignored", why: "header" };

/** The header's fields, trimmed; what detection and the reader both read. */
export function csvHeaderFields(line: string): string[] | null {
  const fields = splitFields(line.replace(/^\uFEFF/, ""), ",");
  return typeof fields === "string" ? null : fields.map((field) => field.trim());
}

/** Whether a first line is a cachelab csv header: it names `key` and a time column, or only known columns. */
export function isCsvHeader(line: string): boolean {
  const fields = csvHeaderFields(line);
  if (fields === null || !fields.includes("key")) return false;
  const known = (field: string) => (CSV_COLUMNS as readonly string[]).includes(field);
  return fields.includes("ts_ms") || fields.includes("ts_s") || fields.every(known);
}

function layoutOf(fields: string[]): Layout | string {
  const at = new Map<CsvColumn, number>();
  for (const [i, field] of fields.entries()) {
    if (!(CSV_COLUMNS as readonly string[]).includes(field))
      return `unknown column ${JSON.stringify(field)}; the columns are ${CSV_COLUMNS.join(", ")}`;
    if (at.has(field as CsvColumn)) return `column ${field} is named twice`;
    at.set(field as CsvColumn, i);
  }
  const key = at.get("key");
  if (key === undefined) return `the header names no key column; the columns are ${CSV_COLUMNS.join(", ")}`;
  if (at.has("ts_ms") && at.has("ts_s")) return "the header names both ts_ms and ts_s; name one";
  const timeMs = at.get("ts_ms");
  return {
    width: fields.length,
    key,
    op: at.get("op") ?? null,
    size: at.get("size") ?? null,
    time: timeMs ?? at.get("ts_s") ?? null,
    timeUnitMs: timeMs === undefined ? 1000 : 1,
  };
}

/** The csv reader: its first non-blank line is the header; a header it cannot use is fatal. */
export function csvParser(): LineParser {
  let layout: Layout | null = null;
  return (line) => {
    if (isBlank(line)) return BLANK;
    if (layout === null) {
      const fields = csvHeaderFields(line);
      const found = fields === null ? "the header's quoting is malformed" : layoutOf(fields);
      if (typeof found === "string") return { skip: "fatal", why: `not a cachelab csv header: ${found}` };
      layout = found;
      return HEADER;
    }
    const fields = splitFields(line, ",");
    if (typeof fields === "string") return bad(fields);
    if (fields.length !== layout.width)
      return bad(`${fields.length} fields where the header names ${layout.width}`);
    return requestFromFields(fields, layout);
  };
}
