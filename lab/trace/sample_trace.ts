/**
 * Writes the sample trace your_workload replays by default (experiments/traces/sample.csv.gz), in
 * cachelab's csv format: a Zipf(0.9) catalog with bursts of re-reads, one-hit wonders, a few writes and
 * deletes, value sizes drawn per key, and arrivals that swell and ebb. Deterministic: the same file for the
 * same options. `bun lab/trace/sample_trace.ts [--requests N] [--out PATH]`.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { seededRandom } from "../plan/targets.ts";

export interface SampleTraceOptions {
  requests: number;
  /** Keys of the catalog, drawn Zipf(0.9). */
  catalogKeys: number;
  seed: number;
  /** Mean arrival rate in the trace's own time. */
  meanRps: number;
}

export const SAMPLE_TRACE_DEFAULTS: SampleTraceOptions = {
  requests: 40_000,
  catalogKeys: 8_000,
  seed: 21,
  meanRps: 1_000,
};

/** The sample trace as csv text: `ts_ms,key,op,size`. */
export function sampleTrace(options: SampleTraceOptions = SAMPLE_TRACE_DEFAULTS): string {
  const random = seededRandom(options.seed);
  const cdf = new Float64Array(options.catalogKeys);
  let total = 0;
  for (let k = 0; k < cdf.length; k++) {
    total += 1 / (k + 1) ** 0.9;
    cdf[k] = total;
  }
  const sizes = new Map<string, number>();
  // Log-normal value sizes, median 700 B, clipped to 60 B – 64 KiB: a key keeps its size.
  const sizeOf = (key: string) => {
    let size = sizes.get(key);
    if (size === undefined) {
      const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      size = Math.round(Math.min(65_536, Math.max(60, 700 * Math.exp(normal))));
      sizes.set(key, size);
    }
    return size;
  };
  const recent: string[] = [];
  const lines = ["ts_ms,key,op,size"];
  let tsMs = 0;
  let oneOffs = 0;
  for (let i = 0; i < options.requests; i++) {
    // Poisson arrivals at a rate that swells and ebbs ±40% over 20 s of trace time.
    const rate = options.meanRps * (1 + 0.4 * Math.sin((2 * Math.PI * tsMs) / 20_000));
    tsMs += (-Math.log(1 - random()) / rate) * 1_000;
    const pick = random();
    let key: string;
    if (pick < 0.15) key = `oneoff:${++oneOffs}`;
    else if (pick < 0.4 && recent.length > 0) key = recent[Math.floor(random() * recent.length)] as string;
    else {
      const u = random() * total;
      let lo = 0;
      let hi = cdf.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((cdf[mid] as number) < u) lo = mid + 1;
        else hi = mid;
      }
      key = `product:${(lo * 7_919) % options.catalogKeys}`;
    }
    recent.push(key);
    if (recent.length > 50) recent.shift();
    const op = key.startsWith("oneoff:") ? "get" : opFor(random());
    lines.push(`${tsMs.toFixed(3)},${key},${op},${sizeOf(key)}`);
  }
  return `${lines.join("\n")}\n`;
}

function opFor(draw: number): "get" | "set" | "delete" {
  if (draw < 0.04) return "set";
  if (draw < 0.045) return "delete";
  return "get";
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { requests: { type: "string" }, out: { type: "string" } },
    strict: true,
  });
  const requests = Number(values.requests ?? SAMPLE_TRACE_DEFAULTS.requests);
  const out = values.out ?? "experiments/traces/sample.csv.gz";
  const text = sampleTrace({ ...SAMPLE_TRACE_DEFAULTS, requests });
  writeFileSync(out, out.endsWith(".gz") ? gzipSync(text, { level: 9 }) : text);
  console.log(`wrote ${requests} requests to ${out}`);
}
