/**
 * `keys`: one key per line, any string (libCacheSim's `txt` trace). Blank lines and lines starting with `#`
 * are skipped and counted; every key is a read, with no size and no time.
 */
import { BLANK, isBlank, type LineParser, type LineSkip } from "./_fields.ts";

const COMMENT: LineSkip = { skip: "ignored", why: "comment" };

/** The keys reader: the line (already without its \r) is the key. */
export function keysParser(): LineParser {
  return (line) => {
    if (isBlank(line)) return BLANK;
    if (line.startsWith("#")) return COMMENT;
    return { key: line, op: "read", sizeBytes: null, tsMs: null };
  };
}
