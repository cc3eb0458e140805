/**
 * The traces a run has read, by the plan's TraceKeys: read once before the first cell (each cell's stream
 * and the simulation take the same requests), then handed to every TargetStream of that plan.
 */
import type { TraceKeys } from "../plan/attack_plan.ts";
import type { CompactTrace } from "./trace.ts";

const loaded = new Map<string, CompactTrace>();

function keyOf(keys: TraceKeys): string {
  const { file, format, columns, route, skipBadLines } = keys;
  return JSON.stringify([file, format ?? null, columns ?? null, route ?? null, skipBadLines === true]);
}

/** Holds `trace` as what `keys` names (the reader's result, or a trace built in memory by a test). */
export function holdTrace(keys: TraceKeys, trace: CompactTrace): CompactTrace {
  loaded.set(keyOf(keys), trace);
  return trace;
}

/** The trace `keys` names, read before; an error naming the file if it was not. */
export function heldTrace(keys: TraceKeys): CompactTrace {
  const trace = loaded.get(keyOf(keys));
  if (trace === undefined) {
    throw new RangeError(`Cannot use trace ${keys.file}: it was not read before its plan was run`);
  }
  return trace;
}
