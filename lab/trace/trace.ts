/**
 * A user's trace, as the lab holds it: the requests in trace order, their keys interned in first-seen order
 * (key index i is the i-th distinct key; the run maps it onto product id i + 1), each request's operation,
 * value size and time when the format gives them. The readers (read.ts) produce it; stats, curves and the
 * plan read it.
 */

export const TRACE_FORMATS = ["keys", "csv", "twitter", "delimited", "access-log"] as const;
export type TraceFormat = (typeof TRACE_FORMATS)[number];

/** What a request does to its key: a read, a write (the value changes) or a delete. */
export type TraceOp = "read" | "write" | "delete";
export const TRACE_OPS: readonly TraceOp[] = ["read", "write", "delete"];

/** One request as a reader yields it. `null`: the format (or this line) does not say. */
export interface TraceRequest {
  key: string;
  op: TraceOp;
  /** The value's size in bytes. */
  sizeBytes: number | null;
  /** When it was sent, in ms on the trace's own clock. */
  tsMs: number | null;
}

/** Lines a reader did not turn into requests, each counted; none is dropped without being counted here. */
export interface TraceSkips {
  /** Malformed lines skipped under --skip-bad-lines (without it the first one is an error). */
  badLines: number;
  /** access-log lines the route does not select: another path or method, or no request line. */
  unmatched: number;
  /** Blank lines, `#` comments and header lines. */
  ignored: number;
  /** The first few skipped lines, for the message: line number, why, and the text cut to 200 characters. */
  examples: { line: number; why: string; text: string }[];
}

/** A whole trace in memory, compact enough for 10^7 requests. */
export interface CompactTrace {
  /** The file it was read from and the format it was read as. */
  source: { path: string; format: TraceFormat };
  /** Per request, the index of its key in `keys` (first-seen order). */
  keyIndex: Int32Array;
  /** Per request, its operation as an index into TRACE_OPS. */
  op: Uint8Array;
  /** Per request, the value size in bytes, or null when the trace has none; -1 where a request has none. */
  sizeBytes: Int32Array | null;
  /** Per request, its time in ms, or null when the trace has none. */
  tsMs: Float64Array | null;
  /** The distinct keys, in first-seen order. */
  keys: string[];
  skips: TraceSkips;
}

/** Interns requests into a CompactTrace (what loadTrace does over a file; tests build one from a list). */
export function compactTrace(
  requests: Iterable<TraceRequest>,
  source: CompactTrace["source"] = { path: "(memory)", format: "keys" },
  skips: TraceSkips = { badLines: 0, unmatched: 0, ignored: 0, examples: [] },
): CompactTrace {
  const builder = traceBuilder(source, skips);
  for (const request of requests) builder.add(request);
  return builder.finish();
}

/** Grows a CompactTrace one request at a time, without holding the requests as objects. */
export function traceBuilder(source: CompactTrace["source"], skips: TraceSkips) {
  const index = new Map<string, number>();
  const keys: string[] = [];
  let keyIndex = new Int32Array(1024);
  let op = new Uint8Array(1024);
  let sizes: Int32Array | null = null;
  let times: Float64Array | null = null;
  let count = 0;
  function grow<T extends Int32Array | Uint8Array | Float64Array>(array: T, make: (n: number) => T): T {
    if (count < array.length) return array;
    const next = make(array.length * 2);
    next.set(array);
    return next;
  }
  return {
    add(request: TraceRequest): void {
      keyIndex = grow(keyIndex, (n) => new Int32Array(n));
      op = grow(op, (n) => new Uint8Array(n));
      let i = index.get(request.key);
      if (i === undefined) {
        i = keys.length;
        index.set(request.key, i);
        keys.push(request.key);
      }
      keyIndex[count] = i;
      op[count] = TRACE_OPS.indexOf(request.op);
      if (request.sizeBytes !== null || sizes !== null) {
        sizes ??= new Int32Array(keyIndex.length).fill(-1, 0, count);
        sizes = grow(sizes, (n) => new Int32Array(n));
        sizes[count] = request.sizeBytes ?? -1;
      }
      if (request.tsMs !== null || times !== null) {
        times ??= new Float64Array(keyIndex.length).fill(Number.NaN, 0, count);
        times = grow(times, (n) => new Float64Array(n));
        times[count] = request.tsMs ?? Number.NaN;
      }
      count++;
    },
    get count(): number {
      return count;
    },
    finish(): CompactTrace {
      return {
        source,
        keyIndex: keyIndex.slice(0, count),
        op: op.slice(0, count),
        sizeBytes: sizes?.slice(0, count) ?? null,
        tsMs: times?.slice(0, count) ?? null,
        keys,
        skips,
      };
    },
  };
}
