/**
 * `delimited`: any delimited trace, read through a column spec in the spirit of libCacheSim's csv reader
 * (`-t "time-col=2,obj-id-col=5,obj-size-col=4,has-header=true,delimiter=,"`, 1-based):
 * `key-col=N` (required; libCacheSim's `obj-id-col` also), `time-col=N`, `size-col=N` (`obj-size-col`),
 * `op-col=N`, `has-header=true|false` (default false), `delimiter=C` (one character, `\t` or `tab`, or
 * `space`; default `,`) and `ts-unit=s|ms` (default s). Fields may be quoted as in RFC 4180.
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

/** A parsed column spec; columns are 0-based here, null where the trace has none. */
export interface ColumnSpec extends FieldColumns {
  hasHeader: boolean;
  delimiter: string;
}

const COLUMN_FIELDS: Record<string, "key" | "time" | "size" | "op"> = {
  "key-col": "key",
  "obj-id-col": "key",
  "time-col": "time",
  "size-col": "size",
  "obj-size-col": "size",
  "op-col": "op",
};
export const SPEC_FIELDS = [...Object.keys(COLUMN_FIELDS), "has-header", "delimiter", "ts-unit"];
const NAMED_DELIMITERS: Record<string, string> = { "\\t": "\t", tab: "\t", space: " " };

function specError(why: string, spec: string): RangeError {
  return new RangeError(
    `Cannot read the column spec: ${why}; the fields are ${SPEC_FIELDS.join(", ")} ` +
      `(e.g. "time-col=1,key-col=2,size-col=3,has-header=true,delimiter=,"): received ${JSON.stringify(spec)}`,
  );
}

/** Reads `name=value,…` pairs; `delimiter=,` is allowed, so a delimiter's value is taken before a comma. */
function specPairs(spec: string): [string, string][] {
  const pairs: [string, string][] = [];
  let i = 0;
  while (i < spec.length) {
    const equals = spec.indexOf("=", i);
    if (equals < 0) throw specError(`${JSON.stringify(spec.slice(i))} is not name=value`, spec);
    const name = spec.slice(i, equals).trim();
    let end = spec.indexOf(",", equals + 1);
    if (name === "delimiter" && end === equals + 1) end = spec.indexOf(",", end + 1);
    if (end < 0) end = spec.length;
    const value = spec.slice(equals + 1, end);
    pairs.push([name, name === "delimiter" ? value : value.trim()]);
    i = end + 1;
  }
  return pairs;
}

/** Parses a column spec; throws RangeError naming the valid fields on anything else. */
export function parseColumnSpec(spec: string): ColumnSpec {
  const columns: Partial<Record<"key" | "time" | "size" | "op", number>> = {};
  let hasHeader = false;
  let delimiter = ",";
  let timeUnitMs = 1000;
  const seen = new Set<string>();
  for (const [name, value] of specPairs(spec)) {
    if (!SPEC_FIELDS.includes(name)) throw specError(`unknown field ${JSON.stringify(name)}`, spec);
    const column = COLUMN_FIELDS[name];
    const slot = column ?? name;
    if (seen.has(slot)) throw specError(`${name} is given twice`, spec);
    seen.add(slot);
    if (column !== undefined) {
      if (!/^[1-9]\d*$/.test(value)) throw specError(`${name} must be a column number from 1`, spec);
      columns[column] = Number(value) - 1;
    } else if (name === "has-header") {
      if (value !== "true" && value !== "false") throw specError("has-header must be true or false", spec);
      hasHeader = value === "true";
    } else if (name === "delimiter") {
      delimiter = NAMED_DELIMITERS[value] ?? value;
      if (delimiter.length !== 1 || delimiter === '"')
        throw specError("delimiter must be one character (not a quote), \\t, tab or space", spec);
    } else {
      if (value !== "s" && value !== "ms") throw specError("ts-unit must be s or ms", spec);
      timeUnitMs = value === "s" ? 1000 : 1;
    }
  }
  if (columns.key === undefined) throw specError("key-col is required", spec);
  return {
    key: columns.key,
    time: columns.time ?? null,
    size: columns.size ?? null,
    op: columns.op ?? null,
    hasHeader,
    delimiter,
    timeUnitMs,
  };
}

const HEADER: LineSkip = { skip: "ignored", why: "header" };

/** The delimited reader for one spec (the spec parsed first: a bad one throws before any line). */
export function delimitedParser(spec: ColumnSpec): LineParser {
  const width = 1 + Math.max(spec.key, spec.time ?? 0, spec.size ?? 0, spec.op ?? 0);
  let headerToSkip = spec.hasHeader;
  return (line) => {
    if (isBlank(line)) return BLANK;
    if (headerToSkip) {
      headerToSkip = false;
      return HEADER;
    }
    const fields = splitFields(line, spec.delimiter);
    if (typeof fields === "string") return bad(fields);
    if (fields.length < width)
      return bad(`${fields.length} fields where the column spec reads column ${width}`);
    return requestFromFields(fields, spec);
  };
}
