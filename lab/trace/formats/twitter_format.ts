/**
 * `twitter`: the Twitter production cache traces (github.com/twitter/cache-trace, CC-BY 4.0), one request
 * a line: `timestamp,anonymized key,key size,value size,client id,operation,TTL`, the time in seconds.
 * get/gets read; set/add/replace/cas/append/prepend/incr/decr write; delete deletes.
 *
 * The README does not say a key cannot hold a comma (memcached keys may), so the key is everything between
 * the first field and the last five. A read's value size is null when it is 0: the samples log gets with
 * value size 0 (a get that found nothing has no value to measure), and a delete's is null (it carries no
 * value); a write's is its value's size, 0 included.
 */
import type { TraceOp } from "../trace.ts";
import {
  BLANK,
  bad,
  isBlank,
  type LineParser,
  type LineResult,
  parseSizeBytes,
  parseTimeMs,
} from "./_fields.ts";

const TWITTER_OPS: Record<string, TraceOp> = {
  get: "read",
  gets: "read",
  set: "write",
  add: "write",
  replace: "write",
  cas: "write",
  append: "write",
  prepend: "write",
  incr: "write",
  decr: "write",
  delete: "delete",
};
const TWITTER_OP_LIST = Object.keys(TWITTER_OPS).join("/");

/** One twitter line as a request, or why it is not one. */
export function parseTwitterLine(line: string): LineResult {
  if (isBlank(line)) return BLANK;
  const first = line.indexOf(",");
  // The five fields after the key, found from the right: [keySize, valueSize, client, op, ttl].
  const commas: number[] = [];
  let at = line.length;
  while (commas.length < 5) {
    at = line.lastIndexOf(",", at - 1);
    if (at <= first) break;
    commas.unshift(at);
  }
  if (first < 0 || commas.length < 5) {
    const fields = line.split(",").length;
    return bad(`${fields} field${fields === 1 ? "" : "s"} where a twitter line has 7`);
  }
  const [c1, c2, c3, c4, c5] = commas as [number, number, number, number, number];
  const key = line.slice(first + 1, c1);
  if (key.length === 0) return bad("empty key");
  const tsMs = parseTimeMs(line.slice(0, first), 1000);
  if (typeof tsMs === "string") return bad(`timestamp: ${tsMs}`);
  if (!/^\d+$/.test(line.slice(c1 + 1, c2))) return bad("key size is not a whole number");
  const valueSize = parseSizeBytes(line.slice(c2 + 1, c3));
  if (typeof valueSize === "string") return bad(`value ${valueSize}`);
  const word = line.slice(c4 + 1, c5);
  const op = TWITTER_OPS[word];
  if (op === undefined)
    return bad(`unknown operation ${JSON.stringify(word)}; twitter's are ${TWITTER_OP_LIST}`);
  if (!/^\d+$/.test(line.slice(c5 + 1))) return bad("TTL is not a whole number of seconds");
  const unknownSize = op === "delete" || (op === "read" && valueSize === 0);
  return { key, op, sizeBytes: unknownSize ? null : valueSize, tsMs };
}

/** Whether a line is shaped like a twitter trace line (detection). */
export function isTwitterLine(line: string): boolean {
  return "key" in parseTwitterLine(line);
}

export function twitterParser(): LineParser {
  return parseTwitterLine;
}
