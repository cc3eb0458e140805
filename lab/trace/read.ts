/**
 * Reading a user's trace: the format named or detected, the file streamed line by line (plain, .gz, .zst),
 * each line parsed by its format's pure reader (formats/), and every line that is not a request counted in
 * TraceSkips. A malformed line is an error naming the file and line, unless skipBadLines counts it; a trace
 * with no request is an error. Nothing is dropped without being counted, and no failure becomes a zero.
 */
import { statSync } from "node:fs";
import { isSkip, type LineParser } from "./formats/_fields.ts";
import { accessLogParser, compileRoute } from "./formats/access_log_format.ts";
import { csvParser } from "./formats/csv_format.ts";
import { delimitedParser, parseColumnSpec } from "./formats/delimited_format.ts";
import { keysParser } from "./formats/keys_format.ts";
import { twitterParser } from "./formats/twitter_format.ts";
import {
  type CompactTrace,
  TRACE_FORMATS,
  type TraceFormat,
  type TraceRequest,
  type TraceSkips,
  traceBuilder,
} from "./trace.ts";
import { DETECT_LINES, detectFormat } from "./trace_detect.ts";
import { type LineBatch, TraceStreamError, traceLineBatches } from "./trace_lines.ts";

export { detectFormat } from "./trace_detect.ts";

export interface TraceReadOptions {
  /** Omitted: detected from the name and first lines (implied by `columns` or `route`); ambiguous → TraceError. */
  format?: TraceFormat;
  /** delimited: the column spec, e.g. "time-col=1,key-col=2,size-col=3,op-col=4,has-header=true,delimiter=,". */
  columns?: string;
  /** access-log: a regex whose first capture group is the key, e.g. '^/api/products/(\d+)'. */
  route?: string;
  /** Count and skip malformed lines (TraceSkips.badLines) instead of failing at the first. */
  skipBadLines?: boolean;
  /** Read at most this many requests. */
  limit?: number;
}

/** A trace that cannot be read: `Cannot read trace <file>: line <n>: <why>: received <text>`. */
export class TraceError extends Error {
  override name = "TraceError";
}

/** A trace being read: iterate `requests` once; `skips` is complete when it ends. */
export interface TraceReader {
  requests: AsyncIterable<TraceRequest>;
  skips: TraceSkips;
  format: TraceFormat;
}

/** Examples kept per kind of skipped line (bad, unmatched). */
const EXAMPLES_PER_KIND = 5;
const TEXT_CHARS = 200;

function cut(text: string): string {
  return text.length > TEXT_CHARS ? `${text.slice(0, TEXT_CHARS)}…` : text;
}

function traceError(path: string, why: string, received: string): TraceError {
  return new TraceError(`Cannot read trace ${path}: ${why}: received ${received}`);
}

function lineError(path: string, line: number, why: string, text: string): TraceError {
  return traceError(path, `line ${line}: ${why}`, JSON.stringify(cut(text)));
}

function checkOptions(path: string, options: TraceReadOptions): TraceFormat | null {
  const { format, columns, route, limit } = options;
  if (format !== undefined && !TRACE_FORMATS.includes(format))
    throw traceError(path, `unknown format; the formats are ${TRACE_FORMATS.join(", ")}`, String(format));
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
    throw traceError(path, "the limit must be a positive whole number of requests", String(limit));
  if (columns !== undefined && route !== undefined)
    throw traceError(path, "--columns is for delimited traces and --route for access logs; give one", route);
  if (columns !== undefined && format !== undefined && format !== "delimited")
    throw traceError(path, "--columns applies to the delimited format only", `format ${format}`);
  if (route !== undefined && format !== undefined && format !== "access-log")
    throw traceError(path, "--route applies to the access-log format only", `format ${format}`);
  return format ?? (columns !== undefined ? "delimited" : route !== undefined ? "access-log" : null);
}

function parserFor(path: string, format: TraceFormat, options: TraceReadOptions): LineParser {
  const as = `${path} as ${format}`;
  try {
    if (format === "keys") return keysParser();
    if (format === "csv") return csvParser();
    if (format === "twitter") return twitterParser();
    if (format === "delimited") {
      const example = '"time-col=1,key-col=2,has-header=true,delimiter=,"';
      if (options.columns === undefined) throw traceError(as, `it needs --columns, e.g. ${example}`, "none");
      return delimitedParser(parseColumnSpec(options.columns));
    }
    const example = "'^/api/products/(\\d+)'";
    if (options.route === undefined)
      throw traceError(
        as,
        `it needs --route, a regex whose first capture group is the key, e.g. ${example}`,
        "none",
      );
    return accessLogParser(compileRoute(options.route));
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    // "Cannot read the column spec: …" → "Cannot read trace t.csv as delimited: the column spec: …"
    throw new TraceError(`Cannot read trace ${as}: ${error.message.replace(/^Cannot read /, "")}`);
  }
}

function streamError(path: string, error: unknown): unknown {
  if (!(error instanceof TraceStreamError)) return error;
  return traceError(path, `after line ${error.afterLine}: ${error.message}`, "the file's bytes");
}

interface OpenTrace {
  format: TraceFormat;
  skips: TraceSkips;
  batches: AsyncGenerator<TraceRequest[]>;
}

async function openTrace(path: string, options: TraceReadOptions): Promise<OpenTrace> {
  const named = checkOptions(path, options);
  let stat: ReturnType<typeof statSync> | undefined;
  try {
    stat = statSync(path);
  } catch {}
  if (stat === undefined) throw traceError(path, "no such file", path);
  if (!stat.isFile()) throw traceError(path, "it is a folder, not a file", path);
  // A named format's spec or route is checked before the file is opened.
  const namedParser = named === null ? null : parserFor(path, named, options);
  const lines = traceLineBatches(path);
  // The first lines are read now for detection, and parsed first when iteration starts.
  const peeked: LineBatch[] = [];
  let peekedLines = 0;
  try {
    while (peekedLines < DETECT_LINES) {
      const next = await lines.next();
      if (next.done) break;
      peeked.push(next.value);
      peekedLines += next.value.lines.length;
    }
  } catch (error) {
    throw streamError(path, error);
  }
  const firstLines = peeked.flatMap((batch) => batch.lines).slice(0, DETECT_LINES);
  // A NUL is in no text format: a binary (an executable, an image, an archive other than .gz or .zst).
  if (firstLines.some((line) => line.includes("\u0000"))) {
    await lines.return(undefined);
    throw traceError(
      path,
      "it is not text (a NUL byte in its first lines); a trace is text, or its .gz or .zst",
      "binary bytes",
    );
  }
  const detected = named ?? detectFormat(path, firstLines);
  if (typeof detected !== "string") {
    await lines.return(undefined);
    const choices = detected.ambiguous.join(" or ");
    throw traceError(
      path,
      `its format is ambiguous: it reads as ${choices}; pass --trace-format ${detected.ambiguous.join("|")}`,
      JSON.stringify(cut(firstLines.find((line) => line.trim().length > 0) ?? "")),
    );
  }
  const format = detected;
  let parse = namedParser;
  try {
    parse ??= parserFor(path, format, options);
  } catch (error) {
    await lines.return(undefined);
    throw error;
  }
  const skips: TraceSkips = { badLines: 0, unmatched: 0, ignored: 0, examples: [] };
  return { format, skips, batches: parseBatches(path, options, parse, skips, peeked, lines) };
}

async function* allBatches(peeked: LineBatch[], rest: AsyncGenerator<LineBatch>): AsyncGenerator<LineBatch> {
  yield* peeked;
  yield* rest;
}

async function* parseBatches(
  path: string,
  options: TraceReadOptions,
  parse: LineParser,
  skips: TraceSkips,
  peeked: LineBatch[],
  lines: AsyncGenerator<LineBatch>,
): AsyncGenerator<TraceRequest[]> {
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const examples = { bad: 0, unmatched: 0 };
  let count = 0;
  /** Counts a skipped line; a bad one is instead the error to throw unless skipBadLines. */
  function skipped(kind: "bad" | "unmatched", line: number, why: string, text: string): TraceError | null {
    if (kind === "bad") {
      if (options.skipBadLines !== true) return lineError(path, line, why, text);
      skips.badLines++;
    } else skips.unmatched++;
    if (examples[kind] < EXAMPLES_PER_KIND) {
      examples[kind]++;
      skips.examples.push({ line, why, text: cut(text) });
    }
    return null;
  }
  const source = allBatches(peeked, lines);
  try {
    for await (const batch of source) {
      const requests: TraceRequest[] = [];
      let error: TraceError | null = null;
      for (let i = 0; i < batch.lines.length && count < limit && error === null; i++) {
        const text = batch.lines[i] as string;
        const line = batch.firstLine + i;
        if (batch.invalidUtf8?.has(line) === true) {
          error = skipped("bad", line, "not valid UTF-8 text", text);
          continue;
        }
        const result = parse(text, line);
        if (!isSkip(result)) {
          requests.push(result);
          count++;
        } else if (result.skip === "ignored") skips.ignored++;
        else if (result.skip === "fatal") error = lineError(path, line, result.why, text);
        else error = skipped(result.skip, line, result.why, text);
      }
      // The requests before a bad line are the consumer's before the error is.
      if (requests.length > 0) yield requests;
      if (error !== null) throw error;
      if (count >= limit) break;
    }
  } catch (error) {
    throw streamError(path, error);
  } finally {
    await lines.return(undefined);
  }
  if (count === 0) throw noRequests(path, skips);
}

function noRequests(path: string, skips: TraceSkips): TraceError {
  const counted = `${skips.ignored} ignored, ${skips.unmatched} unmatched by the route, ${skips.badLines} bad`;
  const example = skips.examples[0];
  const first = example === undefined ? "" : `; first: line ${example.line}: ${example.why}`;
  return traceError(path, `no requests (${counted}${first})`, JSON.stringify(example?.text ?? ""));
}

/** Opens a trace: detects its format (reading its first lines) and streams its requests. */
export async function readTrace(path: string, options: TraceReadOptions = {}): Promise<TraceReader> {
  const trace = await openTrace(path, options);
  let started = false;
  async function* requests(): AsyncGenerator<TraceRequest> {
    if (started)
      throw new TraceError(`Cannot read trace ${path}: its requests are read once: received a second read`);
    started = true;
    for await (const batch of trace.batches) yield* batch;
  }
  return { requests: { [Symbol.asyncIterator]: requests }, skips: trace.skips, format: trace.format };
}

/** Reads a whole trace into a CompactTrace (interned keys, typed arrays), streaming the file. */
export async function loadTrace(path: string, options: TraceReadOptions = {}): Promise<CompactTrace> {
  const trace = await openTrace(path, options);
  const builder = traceBuilder({ path, format: trace.format }, trace.skips);
  for await (const batch of trace.batches) for (const request of batch) builder.add(request);
  return builder.finish();
}
