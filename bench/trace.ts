/**
 * How fast are a trace's statistics and curves? Generates a Zipf trace file (cachelab csv: ts_ms, key, op,
 * size; 5% writes), then in every round, interleaved, times each stage against the bare read-and-split of the
 * same file (read it, split its lines, count them):
 *   parse   lab/trace/read.ts's loadTrace into a CompactTrace
 *   stats   traceStats
 *   lru / local / belady   each curve at 12 capacities (0.01% … 100% of the working set)
 *   sieve / s3fifo / wtinylfu / arc   each eviction policy's curve at the same 12 (one replay per capacity)
 * and prints the full set of seven curves as a ratio to the bare read-and-split and to the parse.
 * Target (set when the first curves were added): stats + the curves ≤ 5× the bare parse, read here as the bare read-and-split
 * (the ratio to loadTrace's parse is printed beside it); and 10^7 requests fit in this 24 GB box (peak RSS).
 *
 *   bun run bench:trace [--requests 1000000] [--keys REQUESTS/10] [--alpha 0.9] [--rounds 3]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seededRandom } from "../lab/plan/targets.ts";
import { POLICY_NAMES } from "../lab/sim/policies/policies.ts";
import {
  beladyCurve,
  type CurveInputs,
  curveInputs,
  localCurve,
  lruCurve,
  parseCapacities,
  policyCurve,
} from "../lab/trace/mrc.ts";
import { loadTrace } from "../lab/trace/read.ts";
import { traceStats } from "../lab/trace/stats.ts";
import { benchArgs } from "./_args.ts";

const SIZES = "0.01%,0.05%,0.1%,0.5%,1%,2%,5%,10%,20%,30%,50%,100%";

const values = benchArgs(
  "bun run bench:trace [--requests 1000000] [--keys REQUESTS/10] [--alpha 0.9] [--rounds 3]",
  {
    requests: { type: "string", default: "1000000" },
    keys: { type: "string" },
    alpha: { type: "string", default: "0.9" },
    rounds: { type: "string", default: "3" },
  },
);
function positiveInt(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (!(Number.isInteger(value) && value >= 1)) {
    console.error(`Cannot run bench:trace: --${name} must be a positive integer: received ${raw}`);
    process.exit(2);
  }
  return value;
}
const requests = positiveInt("requests", values.requests);
const keys = positiveInt("keys", values.keys ?? String(Math.max(1, Math.floor(requests / 10))));
const rounds = positiveInt("rounds", values.rounds);
const alpha = Number(values.alpha);
if (!(alpha > 0)) {
  console.error(`Cannot run bench:trace: --alpha must be > 0: received ${values.alpha}`);
  process.exit(2);
}

/** Writes the trace: Zipf(alpha) ranks by inverse CDF, a size per key, 10 000 requests per trace second. */
async function writeTrace(path: string): Promise<number> {
  const cdf = new Float64Array(keys);
  let total = 0;
  for (let r = 0; r < keys; r++) {
    total += 1 / (r + 1) ** alpha;
    cdf[r] = total;
  }
  const random = seededRandom(42);
  const writer = Bun.file(path).writer();
  writer.write("ts_ms,key,op,size\n");
  let chunk = "";
  for (let i = 0; i < requests; i++) {
    const u = random() * total;
    let lo = 0;
    let hi = keys - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    const sizeBytes = 64 + ((Math.imul(lo + 1, 2_654_435_761) >>> 0) % 4_000);
    chunk += `${(i / 10).toFixed(1)},user:${lo},${random() < 0.05 ? "set" : "get"},${sizeBytes}\n`;
    if (chunk.length > 1 << 20) {
      writer.write(chunk);
      chunk = "";
    }
  }
  writer.write(chunk);
  await writer.end();
  return statSync(path).size;
}

const dir = mkdtempSync(join(tmpdir(), "cachelab-bench-trace-"));
const path = join(dir, "trace.csv");
try {
  const generatedMs = performance.now();
  const fileBytes = await writeTrace(path);
  console.error(
    `wrote ${requests} requests over ${keys} keys, ${(fileBytes / 1e6).toFixed(0)} MB, in ${((performance.now() - generatedMs) / 1000).toFixed(1)} s`,
  );
  const curveStages = ["lru", "local", "belady", ...POLICY_NAMES] as const;
  const stages = ["bare read-and-split", "parse (loadTrace)", "stats", ...curveStages] as const;
  const times = new Map<string, number[]>(stages.map((stage) => [stage, []]));
  const timed = async <T>(stage: string, run: () => T | Promise<T>): Promise<T> => {
    Bun.gc(true);
    const startedMs = performance.now();
    const result = await run();
    times.get(stage)?.push(performance.now() - startedMs);
    return result;
  };
  let workingSet = 0;
  let lastHits = "";
  for (let round = 1; round <= rounds; round++) {
    console.error(`round ${round}/${rounds}`);
    await timed(stages[0], () => readFileSync(path, "utf8").split("\n").length);
    const trace = await timed(stages[1], () => loadTrace(path, { format: "csv" }));
    workingSet = trace.keys.length;
    const capacities = parseCapacities(SIZES, workingSet);
    await timed("stats", () => traceStats(trace));
    // The inputs every curve shares are counted into the LRU's stage.
    let inputs: CurveInputs | undefined;
    const lru = await timed("lru", () => {
      inputs = curveInputs(trace);
      return lruCurve(trace, capacities, inputs);
    });
    const local = await timed("local", () => localCurve(trace, capacities, inputs));
    const belady = await timed("belady", () => beladyCurve(trace, capacities, inputs));
    const policies = [];
    for (const name of POLICY_NAMES) {
      policies.push(await timed(name, () => policyCurve(trace, capacities, name, inputs)));
    }
    lastHits = [lru, local, belady, ...policies]
      .map((curve, m) => `${curveStages[m]}: ${curve.map((p) => p.hitRatio.toFixed(3)).join(" ")}`)
      .join("\n");
  }
  const rssGb = (process.resourceUsage().maxRSS * 1024) / 1e9;
  const at = (stage: string) => times.get(stage) ?? [];
  const ratios = (a: number[], b: number[]) => a.map((value, i) => value / (b[i] as number));
  const spread = (list: number[], digits: number) => {
    const sorted = [...list].sort((a, b) => a - b);
    const median = sorted[Math.floor((sorted.length - 1) / 2)] as number;
    const f = (value: number) => value.toFixed(digits);
    return sorted.length === 1
      ? f(median)
      : `${f(median)} (${f(sorted[0] as number)}–${f(sorted.at(-1) as number)})`;
  };
  const bare = at(stages[0]);
  const parse = at(stages[1]);
  const sum = (list: readonly string[], i: number) =>
    list.reduce((total, s) => total + (at(s)[i] as number), 0);
  const curvesMs = bare.map((_, i) => sum(curveStages, i));
  const work = bare.map((_, i) => sum(["stats", ...curveStages], i));
  console.log(
    `${requests} requests, ${workingSet} keys, Zipf(${alpha}), 5% writes, ${(fileBytes / 1e6).toFixed(0)} MB csv; ` +
      `curves at ${SIZES}; ${rounds} interleaved rounds, median (min–max)`,
  );
  console.log(
    "\n| stage | ms | M requests/s | ÷ bare read-and-split | ÷ parse |\n| --- | --- | --- | --- | --- |",
  );
  for (const stage of stages) {
    const list = at(stage);
    const rate = list.map((ms) => requests / ms / 1e3);
    console.log(
      `| ${stage} | ${spread(list, 0)} | ${spread(rate, 2)} | ${spread(ratios(list, bare), 2)} | ${spread(ratios(list, parse), 2)} |`,
    );
  }
  const workRatio = ratios(work, bare);
  const verdict = Math.max(...workRatio) <= 5 ? "met" : "not met";
  console.log(
    `| all seven curves | ${spread(curvesMs, 0)} | | ${spread(ratios(curvesMs, bare), 2)} | ${spread(ratios(curvesMs, parse), 2)} |`,
  );
  console.log(
    `| stats + all seven curves | ${spread(work, 0)} | | ${spread(workRatio, 2)} | ${spread(ratios(work, parse), 2)} |`,
  );
  console.log(
    `\nthe full set of curves costs ${spread(ratios(curvesMs, bare), 2)}× the bare read-and-split and ${spread(ratios(curvesMs, parse), 2)}× the parse`,
  );
  console.log(
    `target: stats + all seven curves ≤ 5× the bare read-and-split: ${verdict} (${spread(workRatio, 2)}×)`,
  );
  console.log(`peak RSS: ${rssGb.toFixed(2)} GB (this box: 24 GB)`);
  console.log(`\nhit ratios at ${SIZES} (last round):\n${lastHits}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
