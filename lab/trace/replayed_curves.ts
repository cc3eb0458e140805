/**
 * The miss-ratio curves of what a trace attack's cells replayed: the warm-up's sent requests, then the
 * measured run's, taken from the trace in stream order (trace position p is stream position p), with only
 * the measured run's reads counted. LRU and quick-lru are online and deterministic, so the measured run's
 * hits are the whole sent stream's minus its warm-up prefix's; MIN sees the whole sent stream (it looks
 * ahead across the boundary, as the warm cache would let it) and counts its hits over the measured reads.
 * The eviction policies replay the whole sent stream once per capacity, counting the measured reads' hits.
 */
import type { SentTargets } from "../plan/attack_plan.ts";
import { sentPositions } from "../plan/segments.ts";
import { optimalHitsWeighted } from "../sim/optimum.ts";
import { POLICY_NAMES, type PolicyName, policyHits } from "../sim/policies/policies.ts";
import { lruHits } from "./lru_curve.ts";
import {
  type CurveCapacity,
  type CurvePoint,
  DEFAULT_MRC_SIZES,
  type MrcMethod,
  parseCapacities,
  quickLruHits,
  readSizes,
  readsTrace,
} from "./mrc.ts";
import type { CompactTrace } from "./trace.ts";

const READ = 0;

/** What one cell sent of a trace plan's stream: each list's length and the tool's account of it. */
export interface ReplayedSegment {
  /** The targets the warm-up got (stream positions [0, warmList)); 0 without a warm-up. */
  warmList: number;
  /** What the warm-up sent of its list; null without a warm-up. */
  warmSent: SentTargets | null;
  /** Where the measured run's list starts in the stream (the warm-up's planned list size). */
  measuredFrom: number;
  /** The targets the measured run got (stream positions [measuredFrom, measuredFrom + measuredList)). */
  measuredList: number;
  measuredSent: SentTargets;
  /** The plan's key seed (sentPositions emulates a sampler's draws from it). */
  seed: number;
}

/** A capacity of the replayed curves, and whether it is the cell's configured one (l1_max_entries). */
export interface ReplayedCapacity extends CurveCapacity {
  configured: boolean;
}

export interface ReplayedCurves {
  /** Requests of the warm-up prefix, and the span of the measured part's stream positions [from, to). */
  warmupRequests: number;
  fromPosition: number;
  toPosition: number;
  /** The measured run's reads: the denominator of every hit ratio. */
  reads: number;
  /** Distinct keys of the whole sent stream (warm-up and measured): the curves' 100%. */
  workingSetKeys: number;
  curves: Record<MrcMethod, (CurvePoint & { configured: boolean })[]>;
}

/** The trace positions sent, in sending order: the warm-up's, then the measured run's. */
export function replayedPositions(segment: ReplayedSegment): { positions: Int32Array; warmup: number } {
  const warm =
    segment.warmSent === null
      ? new Int32Array(0)
      : sentPositions(segment.warmSent, segment.warmList, segment.seed);
  const measured = sentPositions(segment.measuredSent, segment.measuredList, segment.seed);
  const positions = new Int32Array(warm.length + measured.length);
  positions.set(warm);
  for (let i = 0; i < measured.length; i++)
    positions[warm.length + i] = segment.measuredFrom + (measured[i] as number);
  return { positions, warmup: warm.length };
}

/** The requests at `positions` of `trace`, in that order, as a trace of their own (same keys). */
export function subTrace(trace: CompactTrace, positions: Int32Array): CompactTrace {
  const n = trace.keyIndex.length;
  for (const p of positions) {
    if (p < 0 || p >= n) {
      throw new RangeError(
        `Cannot take the replayed segment of trace ${trace.source.path}: position ${p} is past its ${n} requests: received ${positions.length} positions`,
      );
    }
  }
  const pick = <T extends Int32Array | Uint8Array | Float64Array>(array: T, make: (k: number) => T): T => {
    const out = make(positions.length);
    for (let i = 0; i < positions.length; i++) out[i] = array[positions[i] as number] as number;
    return out;
  };
  return {
    source: trace.source,
    keyIndex: pick(trace.keyIndex, (k) => new Int32Array(k)),
    op: pick(trace.op, (k) => new Uint8Array(k)),
    sizeBytes: trace.sizeBytes && pick(trace.sizeBytes, (k) => new Int32Array(k)),
    tsMs: trace.tsMs && pick(trace.tsMs, (k) => new Float64Array(k)),
    keys: trace.keys,
    skips: trace.skips,
  };
}

/** The first `count` requests of `trace` (views, no copy). */
function prefixOf(trace: CompactTrace, count: number): CompactTrace {
  return {
    ...trace,
    keyIndex: trace.keyIndex.subarray(0, count),
    op: trace.op.subarray(0, count),
    sizeBytes: trace.sizeBytes?.subarray(0, count) ?? null,
    tsMs: trace.tsMs?.subarray(0, count) ?? null,
  };
}

/** DEFAULT_MRC_SIZES of `workingSetKeys`, and the configured capacity (marked; added if no size equals it). */
export function replayedCapacities(workingSetKeys: number, configured: number | null): ReplayedCapacity[] {
  const seen = new Set<number>();
  const out: ReplayedCapacity[] = [];
  for (const capacity of parseCapacities(DEFAULT_MRC_SIZES, workingSetKeys)) {
    if (seen.has(capacity.entries)) continue;
    seen.add(capacity.entries);
    out.push({ ...capacity, configured: capacity.entries === configured });
  }
  if (configured !== null && configured >= 1 && !seen.has(configured)) {
    out.push({ label: String(configured), entries: configured, configured: true });
  }
  return out.sort((a, b) => a.entries - b.entries);
}

/**
 * The curves of the segment sent (see the header), at DEFAULT_MRC_SIZES of its working set and the
 * configured capacity; a RangeError when the measured run sent no read.
 */
export function replayedCurves(
  trace: CompactTrace,
  segment: ReplayedSegment,
  configuredEntries: number | null,
): ReplayedCurves {
  const { positions, warmup } = replayedPositions(segment);
  const sent = subTrace(trace, positions);
  const { keyIndex, op } = sent;
  const bytes = readSizes(sent);
  const seenKey = new Uint8Array(trace.keys.length);
  let workingSetKeys = 0;
  let warmReads = 0;
  let reads = 0;
  let sizedReads = 0;
  let readBytes = 0;
  for (let i = 0; i < keyIndex.length; i++) {
    const key = keyIndex[i] as number;
    if (seenKey[key] === 0) {
      seenKey[key] = 1;
      workingSetKeys++;
    }
    if (op[i] !== READ) continue;
    if (i < warmup) {
      warmReads++;
      continue;
    }
    reads++;
    const size = bytes === null ? -1 : (bytes[i] as number);
    if (size >= 0) {
      sizedReads++;
      readBytes += size;
    }
  }
  if (reads === 0) {
    throw new RangeError(
      `Cannot draw the replayed segment's curves: its measured run sent no read: received ${positions.length - warmup} requests`,
    );
  }
  const capacities = replayedCapacities(workingSetKeys, configuredEntries);
  const point = (c: ReplayedCapacity, hits: number, hitBytes: number) => ({
    ...c,
    hits,
    hitRatio: hits / reads,
    byteHitRatio: sizedReads > 0 && readBytes > 0 ? hitBytes / readBytes : null,
  });
  const entries = capacities.map((c) => c.entries);
  const whole = lruHits(keyIndex, op, { keyCount: trace.keys.length, capacities: entries, readBytes: bytes });
  const warm = lruHits(keyIndex.subarray(0, warmup), op.subarray(0, warmup), {
    keyCount: trace.keys.length,
    capacities: entries,
    readBytes: bytes?.subarray(0, warmup) ?? null,
  });
  const lru = capacities.map((c, s) =>
    point(
      c,
      (whole.hits[s] as number) - (warm.hits[s] as number),
      (whole.hitBytes[s] as number) - (warm.hitBytes[s] as number),
    ),
  );
  const prefix = prefixOf(sent, warmup);
  const prefixBytes = bytes?.subarray(0, warmup) ?? null;
  const local = capacities.map((c) => {
    const [hits, hitBytes] = quickLruHits(sent, c.entries, bytes);
    const [warmHits, warmHitBytes] = quickLruHits(prefix, c.entries, prefixBytes);
    return point(c, hits - warmHits, hitBytes - warmHitBytes);
  });
  // MIN over every sent read, its hits counted from the first measured read (optimum.ts's measuredFrom).
  const { logical, bytes: readWeights } = readsTrace(sent, warmReads + reads, bytes);
  logical.measuredFrom = warmReads;
  const belady = capacities.map((c) => {
    const lifetime = {
      capacity: c.entries,
      ttlMs: Number.POSITIVE_INFINITY,
      ttlInclusive: false,
      extendMs: 0,
    };
    const { hits, weightedHits } = optimalHitsWeighted(logical, lifetime, readWeights);
    return point(c, hits, weightedHits);
  });
  const columns = { keyIndex, op, keyCount: trace.keys.length };
  const policy = (name: PolicyName) =>
    capacities.map((c) =>
      point(c, ...policyHits(name, columns, { capacity: c.entries, readBytes: bytes, countFrom: warmup })),
    );
  const policies = Object.fromEntries(POLICY_NAMES.map((name) => [name, policy(name)])) as Record<
    PolicyName,
    ReturnType<typeof policy>
  >;
  let toPosition = segment.measuredFrom;
  for (let i = warmup; i < positions.length; i++)
    toPosition = Math.max(toPosition, (positions[i] as number) + 1);
  return {
    warmupRequests: warmup,
    fromPosition: segment.measuredFrom,
    toPosition,
    reads,
    workingSetKeys,
    curves: { lru, local, belady, ...policies },
  };
}
