/**
 * Which format a trace is, from its name and its first lines. The content decides where it is clear (a
 * cachelab csv header, twitter's seven fields, a log line); the extension decides where it is not; where
 * both could apply (a headerless 7-column .csv: twitter or delimited?) the answer is "ambiguous", never a
 * guess, and the reader asks for --trace-format.
 */
import { extname } from "node:path";
import { isAccessLogLine } from "./formats/access_log_format.ts";
import { isCsvHeader } from "./formats/csv_format.ts";
import { isTwitterLine } from "./formats/twitter_format.ts";
import type { TraceFormat } from "./trace.ts";

/** How many of the first lines detection reads. */
export const DETECT_LINES = 20;

/** The extension that names the content: `.csv` of `t.csv.zst`, "" for `cluster026` and `cluster52.0.zst`. */
export function contentExtension(path: string): string {
  const inner = path.replace(/\.(gz|zst)$/i, "");
  const extension = extname(inner).toLowerCase();
  return [".csv", ".log", ".txt", ".tsv"].includes(extension) ? extension : "";
}

/** The format of a trace named `path` whose first lines are `firstLines`, or the formats it could be. */
export function detectFormat(path: string, firstLines: string[]): TraceFormat | { ambiguous: TraceFormat[] } {
  const extension = contentExtension(path);
  const lines = firstLines
    .slice(0, DETECT_LINES)
    .map((line) => line.replace(/^\uFEFF/, ""))
    .filter((line) => line.trim().length > 0);
  const first = lines[0];
  if (first !== undefined && isCsvHeader(first)) return "csv";
  // The first line and most of the others: one malformed line among them is its reader's to report, not a
  // reason to read a twitter trace as keys.
  const shapedAs = (shaped: (line: string) => boolean) =>
    first !== undefined && shaped(first) && 2 * lines.filter(shaped).length > lines.length;
  // Each named format the extension suggests, when the content says another.
  const byExtension: Record<string, TraceFormat> = {
    ".csv": "delimited",
    ".tsv": "delimited",
    ".txt": "keys",
  };
  const suggested = byExtension[extension];
  if (shapedAs(isAccessLogLine))
    return suggested === undefined ? "access-log" : { ambiguous: ["access-log", suggested] };
  if (shapedAs(isTwitterLine)) {
    if (suggested === undefined) return "twitter";
    return { ambiguous: ["twitter", suggested] };
  }
  if (extension === ".csv") return { ambiguous: ["csv", "delimited"] };
  if (extension === ".tsv") return "delimited";
  if (extension === ".log") return "access-log";
  return "keys";
}
