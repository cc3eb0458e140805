/**
 * Reading an append-only CSV that may hold a malformed row: a write cut short (a full disk, a killed
 * writer) leaves a partial line, which the next append starts a fresh line after (csv.ts). Each record is
 * read on its own, so one bad row is skipped, named by its line, and the rows around it are kept.
 */
import { readFileSync } from "node:fs";
import { parse } from "csv-parse/sync";

/** A record and the line it starts on (1-based, the header is line 1). */
export interface CsvRecord {
  fields: string[];
  line: number;
}

/** A line that is not a whole record of the header's width, and why. */
export interface SkippedLine {
  line: number;
  reason: string;
}

export interface CsvContent {
  /** The header's fields, or null for an empty file. */
  header: string[] | null;
  records: CsvRecord[];
  skipped: SkippedLine[];
}

function quotes(line: string): number {
  let count = 0;
  for (const char of line) if (char === '"') count++;
  return count;
}

function parseOne(text: string): string[] | string {
  try {
    const records = parse(text, { relax_column_count: true }) as string[][];
    if (records.length !== 1) return `${records.length} records where one was expected`;
    return records[0] as string[];
  } catch (error) {
    return (error as Error).message;
  }
}

/** The whole file at once when it is well formed (the usual case); null when any record is not (another width included). */
function parseWhole(text: string): CsvContent | null {
  if (text !== "" && !text.endsWith("\n")) return null;
  let parsed: { record: string[]; info: { lines: number } }[];
  try {
    parsed = parse(text, { info: true, skip_empty_lines: true }) as unknown as typeof parsed;
  } catch {
    return null;
  }
  const [header, ...body] = parsed;
  if (header === undefined) return { header: null, records: [], skipped: [] };
  // info.lines is where a record ends; a record with a quoted newline starts earlier.
  const records = body.map(({ record, info }) => ({
    fields: record,
    line: info.lines - (record.join(",").split("\n").length - 1),
  }));
  return { header: header.record, records, skipped: [] };
}

/**
 * Every record of `text` with the header's width. A record is the lines up to the first that closes every
 * quote (RFC 4180); one that does not parse, has another width or is the unterminated last line (a write
 * cut short) is skipped, and reading resumes on the next line, so a partial line's open quote never swallows
 * the good rows after it.
 */
export function readCsv(text: string): CsvContent {
  const whole = parseWhole(text);
  if (whole !== null) return whole;
  const lines = text.split("\n");
  const terminated = text.endsWith("\n");
  if (terminated) lines.pop();
  let header: string[] | null = null;
  const records: CsvRecord[] = [];
  const skipped: SkippedLine[] = [];
  let start = 0;
  while (start < lines.length) {
    if (lines[start] === "") {
      start++;
      continue;
    }
    let end = start;
    let open = quotes(lines[start] as string) % 2 === 1;
    while (open && end + 1 < lines.length) {
      end++;
      open = (quotes(lines[end] as string) % 2 === 1) !== open;
    }
    const line = start + 1;
    const parsed = open ? "a quoted field is never closed" : parseOne(lines.slice(start, end + 1).join("\n"));
    let reason: string | null = null;
    if (typeof parsed === "string") reason = parsed;
    // A header is written whole (link(2) in csv.ts): only a record's missing newline means a cut write.
    else if (header !== null && !terminated && end === lines.length - 1)
      reason = "the last line has no newline: a write cut short";
    else if (header !== null && parsed.length !== header.length)
      reason = `${parsed.length} fields where the header has ${header.length}`;
    if (reason !== null || typeof parsed === "string") {
      if (header === null) throw new TypeError(`Cannot read the header: ${reason}`);
      skipped.push({ line, reason: reason ?? "unreadable" });
      start++;
      continue;
    }
    const fields = parsed;
    if (header === null) header = fields;
    else records.push({ fields, line });
    start = end + 1;
  }
  return { header, records, skipped };
}

/** A skipped line of a named file. */
export interface SkippedRow extends SkippedLine {
  path: string;
}

/** The warning a reader prints for a skipped row. */
export function skippedWarning({ path, line, reason }: SkippedRow): string {
  return `warning: skipped ${path} line ${line}: ${reason}`;
}

/**
 * Hands each skipped line of `path` to `onSkip`, in line order; without `onSkip` a reader is strict, and the
 * first one throws, naming the line.
 */
export function deliverSkipped(
  path: string,
  skipped: SkippedLine[],
  onSkip: ((skipped: SkippedRow) => void) | undefined,
): void {
  const ordered = [...skipped].sort((a, b) => a.line - b.line);
  const [first] = ordered;
  if (first !== undefined && !onSkip)
    throw new TypeError(`Cannot read ${path} line ${first.line}: ${first.reason}`);
  for (const { line, reason } of ordered) onSkip?.({ path, line, reason });
}

/**
 * A side file's rows (a timeline, curves, capacities): its header must be `columns` exactly (the `schema`
 * named otherwise), each record is `parse`d, and a line that does not parse is skipped (deliverSkipped).
 */
export function readSideCsv<T>(
  path: string,
  schema: { name: string; columns: readonly string[] },
  parseRow: (fields: string[]) => T,
  onSkip: ((skipped: SkippedRow) => void) | undefined,
): T[] {
  let content: CsvContent;
  try {
    content = readCsv(readFileSync(path, "utf8"));
  } catch (error) {
    throw new TypeError(`Cannot read ${path}: ${(error as Error).message}`);
  }
  if (content.header === null || content.header.join(",") !== schema.columns.join(",")) {
    throw new TypeError(
      `Cannot read ${path}: its header is not the ${schema.name} schema: received ${content.header?.join(",") ?? "an empty file"}`,
    );
  }
  const rows: T[] = [];
  const skipped: SkippedLine[] = [...content.skipped];
  for (const { fields, line } of content.records) {
    try {
      rows.push(parseRow(fields));
    } catch (error) {
      skipped.push({ line, reason: (error as Error).message });
    }
  }
  deliverSkipped(path, skipped, onSkip);
  return rows;
}
