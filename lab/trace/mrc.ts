/**
 * Miss-ratio curves of a trace: the hit ratio and byte hit ratio at each capacity (entries) of exact LRU, of
 * the `local` strategy's quick-lru (the simulator's model, two generations), of Belady's demand MIN, and of
 * the eviction policies SIEVE, S3-FIFO, W-TinyLFU and ARC (lab/sim/policies). All replay the same operations
 * the same way (OP_SEMANTICS), as cache-aside: a read that misses loads and inserts, a write or delete
 * invalidates. Definitions and how to read a curve: docs/trace_statistics.md.
 */
import { type LogicalTrace, NEVER, optimalHitsWeighted } from "../sim/optimum.ts";
import { POLICY_NAMES, type PolicyName, policyHits } from "../sim/policies/policies.ts";
import { lruHits } from "./lru_curve.ts";
import type { CompactTrace } from "./trace.ts";

const READ = 0;
const DELETE = 2;

export const MRC_METHODS = ["lru", "local", "belady", ...POLICY_NAMES] as const;
export type MrcMethod = (typeof MRC_METHODS)[number];

export const OP_SEMANTICS =
  "cache-aside: only reads count; a read hits or loads and inserts; a write or delete invalidates the key (its next read misses)";

export const DEFAULT_MRC_SIZES = "0.1%,1%,5%,10%,25%,50%,100%";

/** One capacity of a curve: as the user wrote it (`1%`, `500`) and in entries. */
export interface CurveCapacity {
  label: string;
  entries: number;
}

export interface CurvePoint extends CurveCapacity {
  hits: number;
  hitRatio: number;
  /** Hit bytes ÷ requested bytes over the reads with a known size; null when none has one. */
  byteHitRatio: number | null;
}

export interface MissRatioCurves {
  opSemantics: typeof OP_SEMANTICS;
  capacityUnit: "entries";
  reads: number;
  /** Reads with a known size: their own, else their key's latest earlier one. */
  sizedReads: number;
  readBytes: number | null;
  curves: Record<MrcMethod, CurvePoint[]>;
}

/**
 * `--sizes`: percentages of the working set in keys (`0.1%,1%,100%`, rounded to entries, at least 1) or
 * entry counts (`100,1000`), mixed freely; sorted ascending.
 */
export function parseCapacities(raw: string, workingSetKeys: number): CurveCapacity[] {
  const fail = (detail: string): never => {
    throw new RangeError(
      `Cannot parse --sizes: ${detail}; expected percentages of the working set (0.1%,1%,…) or entry counts (100,1000,…): received ${raw}`,
    );
  };
  const items = raw.split(",").map((item) => item.trim());
  const capacities = items.map((label): CurveCapacity => {
    const percent = /^(\d+(?:\.\d+)?|\.\d+)%$/.exec(label);
    if (percent) {
      const share = Number(percent[1]);
      if (!(share > 0 && share <= 100)) fail(`a percentage must be in (0, 100]: ${label}`);
      return { label, entries: Math.max(1, Math.round((share / 100) * workingSetKeys)) };
    }
    if (/^[1-9]\d*$/.test(label) && Number.isSafeInteger(Number(label))) {
      return { label, entries: Number(label) };
    }
    return fail(`not a size: "${label}"`);
  });
  return capacities.sort((a, b) => a.entries - b.entries);
}

/** Each read's value size: its own, else its key's latest earlier one (−1: unknown); null without sizes. */
export function readSizes(trace: CompactTrace): Int32Array | null {
  const sizeBytes = trace.sizeBytes;
  if (sizeBytes === null) return null;
  const { keyIndex, op } = trace;
  const known = new Int32Array(trace.keys.length).fill(-1);
  const out = new Int32Array(keyIndex.length).fill(-1);
  for (let i = 0; i < keyIndex.length; i++) {
    const key = keyIndex[i] as number;
    const size = sizeBytes[i] as number;
    if (size >= 0 && op[i] !== DELETE) known[key] = size;
    if (op[i] === READ) out[i] = known[key] as number;
  }
  return out;
}

/**
 * quick-lru@7.3.0 with maxSize `entries`, driven as local.ts drives it (get; set on a miss; delete on an
 * invalidation): [hits, hit bytes]. The generations are numbers per key rather than two Maps, so a rotation
 * costs O(1); under this driving a key is never in both generations, and the test holds it equal to
 * lab/sim/cache_models.ts's QuickLruModel and to quick-lru itself, request by request.
 */
export function quickLruHits(
  trace: CompactTrace,
  entries: number,
  readBytes: Int32Array | null,
): [number, number] {
  const { keyIndex, op } = trace;
  // The generation a key was inserted in: `current` is quick-lru's #cache, `current − 1` its #oldCache, and
  // anything else (0: never) absent. Generation 1 is never used, so the first old generation is empty.
  const generation = new Int32Array(trace.keys.length);
  let current = 2;
  let size = 0;
  let hits = 0;
  let hitBytes = 0;
  for (let i = 0; i < keyIndex.length; i++) {
    const key = keyIndex[i] as number;
    const at = generation[key] as number;
    if (op[i] !== READ) {
      if (at === current) size--;
      if (at >= current - 1) generation[key] = 0;
      continue;
    }
    if (at === current) {
      hits++;
      const bytes = readBytes === null ? -1 : (readBytes[i] as number);
      if (bytes > 0) hitBytes += bytes;
      continue;
    }
    if (at === current - 1) {
      hits++;
      const bytes = readBytes === null ? -1 : (readBytes[i] as number);
      if (bytes > 0) hitBytes += bytes;
    }
    // A miss inserts; an old-generation hit is promoted by the same insert (quick-lru's #set).
    generation[key] = current;
    if (++size >= entries) {
      size = 0;
      current++;
    }
  }
  return [hits, hitBytes];
}

/**
 * The reads as optimum.ts's LogicalTrace: each read's next read of its key, or NEVER when a write or delete
 * comes first (no copy outlives an invalidation); no TTL, so the times are all 0.
 */
export function readsTrace(
  trace: CompactTrace,
  reads: number,
  sizes: Int32Array | null,
): { logical: LogicalTrace; bytes: Int32Array | null } {
  const { keyIndex, op } = trace;
  const keys = new Int32Array(reads);
  const bytes = sizes === null ? null : new Int32Array(reads);
  const nextUse = new Int32Array(reads);
  const nextRead = new Int32Array(trace.keys.length).fill(NEVER);
  let r = reads;
  for (let i = keyIndex.length - 1; i >= 0; i--) {
    const key = keyIndex[i] as number;
    if (op[i] !== READ) {
      nextRead[key] = NEVER;
      continue;
    }
    r--;
    keys[r] = key;
    if (bytes !== null) bytes[r] = sizes?.[i] as number;
    nextUse[r] = nextRead[key] as number;
    nextRead[key] = r;
  }
  const logical = {
    keys,
    timesMs: new Float64Array(reads),
    nextUse,
    counted: new Uint8Array(reads).fill(1),
    keyCount: trace.keys.length,
    measuredFrom: 0,
  };
  return { logical, bytes };
}

/** What every curve reads off the trace once: the reads, their sizes and their bytes. */
export interface CurveInputs {
  reads: number;
  sizedReads: number;
  readBytes: number;
  /** readSizes(trace). */
  bytes: Int32Array | null;
}

/** The trace's CurveInputs; a RangeError for a trace without reads (a hit ratio of nothing). */
export function curveInputs(trace: CompactTrace): CurveInputs {
  const { keyIndex, op } = trace;
  const bytes = readSizes(trace);
  let reads = 0;
  let sizedReads = 0;
  let readBytes = 0;
  for (let i = 0; i < keyIndex.length; i++) {
    if (op[i] !== READ) continue;
    reads++;
    const size = bytes === null ? -1 : (bytes[i] as number);
    if (size >= 0) {
      sizedReads++;
      readBytes += size;
    }
  }
  if (reads === 0) {
    throw new RangeError(
      `Cannot draw a miss-ratio curve: the trace has no reads: received ${keyIndex.length} requests`,
    );
  }
  return { reads, sizedReads, readBytes, bytes };
}

function checkCapacities(capacities: readonly CurveCapacity[]): void {
  for (const { label, entries } of capacities) {
    if (!(Number.isSafeInteger(entries) && entries >= 1)) {
      throw new RangeError(`Cannot draw a miss-ratio curve: a capacity must be ≥ 1 entry: received ${label}`);
    }
  }
}

function point(inputs: CurveInputs, capacity: CurveCapacity, hits: number, hitBytes: number): CurvePoint {
  const { reads, sizedReads, readBytes } = inputs;
  return {
    ...capacity,
    hits,
    hitRatio: hits / reads,
    byteHitRatio: sizedReads > 0 && readBytes > 0 ? hitBytes / readBytes : null,
  };
}

/** Exact LRU at every capacity, in one pass (lru_curve.ts). */
export function lruCurve(
  trace: CompactTrace,
  capacities: readonly CurveCapacity[],
  inputs: CurveInputs = curveInputs(trace),
): CurvePoint[] {
  checkCapacities(capacities);
  const lru = lruHits(trace.keyIndex, trace.op, {
    keyCount: trace.keys.length,
    capacities: capacities.map((c) => c.entries),
    readBytes: inputs.bytes,
  });
  return capacities.map((c, s) => point(inputs, c, lru.hits[s] as number, lru.hitBytes[s] as number));
}

/** The local strategy's quick-lru at maxSize = each capacity, one replay per capacity. */
export function localCurve(
  trace: CompactTrace,
  capacities: readonly CurveCapacity[],
  inputs: CurveInputs = curveInputs(trace),
): CurvePoint[] {
  checkCapacities(capacities);
  return capacities.map((c) => point(inputs, c, ...quickLruHits(trace, c.entries, inputs.bytes)));
}

/** Demand MIN (optimum.ts's optimalHits) at each capacity, one replay per capacity. */
export function beladyCurve(
  trace: CompactTrace,
  capacities: readonly CurveCapacity[],
  inputs: CurveInputs = curveInputs(trace),
): CurvePoint[] {
  checkCapacities(capacities);
  // optimum.ts replays the reads alone, so its weights are indexed by read.
  const { logical, bytes } = readsTrace(trace, inputs.reads, inputs.bytes);
  return capacities.map((c) => {
    const { hits, weightedHits } = optimalHitsWeighted(
      logical,
      { capacity: c.entries, ttlMs: Number.POSITIVE_INFINITY, ttlInclusive: false, extendMs: 0 },
      bytes,
    );
    return point(inputs, c, hits, weightedHits);
  });
}

/** An eviction policy (lab/sim/policies) at each capacity, one O(requests) replay per capacity. */
export function policyCurve(
  trace: CompactTrace,
  capacities: readonly CurveCapacity[],
  name: PolicyName,
  inputs: CurveInputs = curveInputs(trace),
): CurvePoint[] {
  checkCapacities(capacities);
  const columns = { keyIndex: trace.keyIndex, op: trace.op, keyCount: trace.keys.length };
  return capacities.map((c) =>
    point(inputs, c, ...policyHits(name, columns, { capacity: c.entries, readBytes: inputs.bytes })),
  );
}

/** Every curve of `trace` at `capacities` (entries); every request is replayed, reads are counted. */
export function missRatioCurves(trace: CompactTrace, capacities: readonly CurveCapacity[]): MissRatioCurves {
  checkCapacities(capacities);
  const inputs = curveInputs(trace);
  return {
    opSemantics: OP_SEMANTICS,
    capacityUnit: "entries",
    reads: inputs.reads,
    sizedReads: inputs.sizedReads,
    readBytes: inputs.sizedReads > 0 ? inputs.readBytes : null,
    curves: {
      lru: lruCurve(trace, capacities, inputs),
      local: localCurve(trace, capacities, inputs),
      belady: beladyCurve(trace, capacities, inputs),
      sieve: policyCurve(trace, capacities, "sieve", inputs),
      s3fifo: policyCurve(trace, capacities, "s3fifo", inputs),
      wtinylfu: policyCurve(trace, capacities, "wtinylfu", inputs),
      arc: policyCurve(trace, capacities, "arc", inputs),
    },
  };
}
