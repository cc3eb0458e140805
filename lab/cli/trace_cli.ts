/**
 * `bun run trace`: a trace's statistics and miss-ratio curves, read from the file alone (nothing started).
 * (Not lab/cli/trace.ts: lab/trace/trace.ts holds that name, and lab files' names are unique.)
 *
 *   bun run trace stats FILE [reading flags] [--json]
 *   bun run trace mrc FILE [--sizes 0.1%,1%,…|N,…] [--capacity N] [reading flags] [--json]
 */
import {
  type CurveCapacity,
  DEFAULT_MRC_SIZES,
  type MissRatioCurves,
  MRC_METHODS,
  missRatioCurves,
  parseCapacities,
} from "../trace/mrc.ts";
import { loadTrace, TraceError, type TraceReadOptions } from "../trace/read.ts";
import { type TraceStats, traceStats } from "../trace/stats.ts";
import { type CompactTrace, TRACE_FORMATS } from "../trace/trace.ts";
import { asksForHelp, exitWith, parseFlags, parsePositiveInt, refuseUsage, UsageError } from "./args.ts";
import { parseTraceFormat } from "./trace_args.ts";

export const TRACE_SUBCOMMANDS = ["stats", "mrc"] as const;

const USAGE = `usage: bun run trace stats FILE [--trace-format F] [--trace-columns SPEC] [--route REGEX] [--skip-bad-lines] [--limit N] [--json]
       bun run trace mrc FILE [--sizes ${DEFAULT_MRC_SIZES}|N,…] [--capacity N] [the same reading flags] [--json]

  stats            requests, keys, operation shares, one-hit wonders, compulsory misses, Zipf alpha, working
                   set, value sizes, reuse distance, request rate (docs/trace_statistics.md)
  mrc              hit ratio and byte hit ratio per capacity of exact LRU, local's quick-lru, Belady's MIN
                   and the eviction policies SIEVE, S3-FIFO, W-TinyLFU and ARC
  --trace-format   ${TRACE_FORMATS.join(", ")} (default: detected from the name and first lines)
  --trace-columns  the delimited format's columns (or --columns): time-col=…,key-col=…,size-col=…,op-col=…,has-header=…,delimiter=…
  --route          access-log: a regex whose first capture is the key, e.g. '^/api/products/(\\d+)'
  --skip-bad-lines count and skip malformed lines instead of stopping at the first
  --limit N        read the first N requests only (a Twitter cluster file holds up to 10^9)
  --sizes          capacities: percentages of the working set in keys, or entry counts (default ${DEFAULT_MRC_SIZES})
  --capacity       the experiment's configured capacity in entries (l1MaxEntries), marked in the table
  --json           one JSON object instead of the table
  -h, --help       this text`;

export type LoadTrace = (path: string, options: TraceReadOptions) => Promise<CompactTrace>;

function ratioText(value: number | null, digits = 3): string {
  return value === null ? "unknown" : value.toFixed(digits);
}

function numberText(value: number | null, unit = ""): string {
  if (value === null) return "unknown";
  const text = Number.isInteger(value) ? value.toLocaleString("en-US") : value.toFixed(2);
  return unit === "" ? text : `${text} ${unit}`;
}

function skipsText(trace: CompactTrace): string {
  const { badLines, unmatched, ignored } = trace.skips;
  return `skipped lines: ${badLines} bad (--skip-bad-lines), ${unmatched} unmatched by the route, ${ignored} blank, comment or header`;
}

/** The statistics as the table `bun run trace stats` prints. */
export function statsText(trace: CompactTrace, stats: TraceStats = traceStats(trace)): string {
  const sizes = [
    stats.valueSizeP50Bytes,
    stats.valueSizeP90Bytes,
    stats.valueSizeP99Bytes,
    stats.valueSizeMaxBytes,
  ]
    .map((bytes) => numberText(bytes, "B"))
    .join(" / ");
  const rows: [string, string][] = [
    ["requests", numberText(stats.requests)],
    ["distinct keys (working set)", numberText(stats.distinctKeys)],
    [
      "read / write / delete share",
      [stats.readShare, stats.writeShare, stats.deleteShare].map((share) => share.toFixed(3)).join(" / "),
    ],
    [`one-hit-wonder ratio (${stats.oneHitWonderWindow})`, ratioText(stats.oneHitWonderRatio)],
    ["compulsory miss ratio", ratioText(stats.compulsoryMissRatio)],
    ["compulsory byte miss ratio", ratioText(stats.compulsoryByteMissRatio)],
    ["mean object frequency", numberText(stats.meanObjectFrequency)],
    [
      "Zipf alpha",
      `${ratioText(stats.zipfAlpha)} (${stats.zipfFit}: ${numberText(stats.zipfFitRanks)} ranks)`,
    ],
    ["working set bytes (each key's last size)", numberText(stats.workingSetBytes, "B")],
    [
      "value size p50 / p90 / p99 / max",
      `${sizes} (${numberText(stats.sizedRequests)} sized requests, ${stats.percentileMethod})`,
    ],
    ["reuse distance median (distinct keys)", numberText(stats.reuseDistanceMedian)],
    ["duration", numberText(stats.durationS, "s")],
    ["request rate (mean over trace time)", numberText(stats.requestRateRps, "rps")],
    [
      "per-second rate p50 / p99 / peak",
      [stats.secondRateP50Rps, stats.secondRateP99Rps, stats.secondRatePeakRps]
        .map((rps) => numberText(rps))
        .join(" / "),
    ],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const header = `trace ${trace.source.path} (${trace.source.format}); ${skipsText(trace)}`;
  return [header, ...rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`)].join("\n");
}

/** The capacities of `--sizes`, with the configured capacity added (if absent) and flagged. */
export function mrcCapacities(
  trace: CompactTrace,
  options: { sizes?: string; capacity?: number },
): { capacities: CurveCapacity[]; configured: number | null } {
  const capacities = parseCapacities(options.sizes ?? DEFAULT_MRC_SIZES, trace.keys.length);
  const configured = options.capacity ?? null;
  if (configured !== null && !capacities.some((c) => c.entries === configured)) {
    capacities.push({ label: String(configured), entries: configured });
    capacities.sort((a, b) => a.entries - b.entries);
  }
  return { capacities, configured };
}

/** The curves as `bun run trace mrc` prints them: a hit ratio table, then a byte hit ratio table. */
export function mrcText(trace: CompactTrace, curves: MissRatioCurves, configured: number | null): string {
  const columns = ["size", "entries", ...MRC_METHODS, ""];
  const table = (ratio: "hitRatio" | "byteHitRatio") => {
    const rows = curves.curves.lru.map((point, s) => [
      point.label,
      String(point.entries),
      ...MRC_METHODS.map((method) => ratioText(curves.curves[method][s]?.[ratio] ?? null)),
      point.entries === configured ? "◀ --capacity" : "",
    ]);
    const widths = columns.map((name, c) =>
      Math.max(name.length, ...rows.map((row) => (row[c] as string).length)),
    );
    const line = (cells: string[]) =>
      cells
        .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number)))
        .join("  ")
        .trimEnd();
    return [line(columns), ...rows.map(line)];
  };
  return [
    `trace ${trace.source.path} (${trace.source.format}): ${numberText(curves.reads)} reads of ${numberText(trace.keys.length)} keys, ${numberText(curves.sizedReads)} with a size; ${skipsText(trace)}`,
    `replay: ${curves.opSemantics}; capacity in ${curves.capacityUnit} (every value one entry)`,
    "local is quick-lru at maxSize = entries: it keeps up to 2·entries − 1 keys, so it can beat belady at the same entries",
    "sieve, s3fifo, wtinylfu, arc: eviction policies at capacity = entries (docs/trace_statistics.md)",
    "",
    "hit ratio",
    ...table("hitRatio"),
    "",
    "byte hit ratio",
    ...table("byteHitRatio"),
  ].join("\n");
}

/** `bun run trace …`; returns the exit code. `load` reads the file (a test passes one over a trace in memory). */
export async function main(args: string[], load: LoadTrace = loadTrace): Promise<number> {
  try {
    const [subcommand, ...rest] = args;
    if (asksForHelp(args)) {
      console.log(USAGE);
      return 0;
    }
    if (!(TRACE_SUBCOMMANDS as readonly string[]).includes(subcommand ?? "")) {
      throw new UsageError(
        `Cannot run bun run trace: expected a subcommand, one of ${TRACE_SUBCOMMANDS.join(", ")}: received ${subcommand ?? "nothing"}`,
      );
    }
    const mrc = subcommand === "mrc";
    const parsed = parseFlags({
      args: rest,
      options: {
        "trace-format": { type: "string" },
        "trace-columns": { type: "string" },
        columns: { type: "string" },
        route: { type: "string" },
        "skip-bad-lines": { type: "boolean", default: false },
        limit: { type: "string" },
        json: { type: "boolean", default: false },
        ...(mrc ? { sizes: { type: "string" }, capacity: { type: "string" } } : {}),
      },
      strict: true,
      allowPositionals: true,
    });
    const values = parsed.values as Record<string, string | boolean | undefined>;
    if (parsed.positionals.length !== 1) {
      throw new UsageError(
        `Cannot run bun run trace ${subcommand}: expected one trace FILE: received ${parsed.positionals.length} (${parsed.positionals.join(" ")})`,
      );
    }
    const file = parsed.positionals[0] as string;
    const capacity =
      typeof values.capacity === "string" ? parsePositiveInt("capacity", values.capacity) : undefined;
    const sizes = typeof values.sizes === "string" ? values.sizes : undefined;
    // --sizes is checked before the file is read: a typo costs no parse of 10^7 lines.
    if (sizes !== undefined) wrapRange(() => parseCapacities(sizes, 1));
    const options: TraceReadOptions = {};
    const format = parseTraceFormat(values["trace-format"]);
    if (format !== undefined) options.format = format;
    // --trace-columns as on bun run experiment and attack; --columns, the short form, too.
    const columns = values["trace-columns"] ?? values.columns;
    if (typeof columns === "string") options.columns = columns;
    if (typeof values.route === "string") options.route = values.route;
    if (values["skip-bad-lines"] === true) options.skipBadLines = true;
    if (typeof values.limit === "string") options.limit = parsePositiveInt("limit", values.limit);
    let trace: CompactTrace;
    try {
      trace = await load(file, options);
    } catch (error) {
      // The reader's TraceError (a bad line, an ambiguous format, no such file): the input, not the flags.
      if (!(error instanceof TraceError)) throw error;
      return refuseUsage("trace", error.message);
    }
    const json = values.json === true;
    if (!mrc) {
      const stats = wrapRange(() => traceStats(trace));
      console.log(
        json ? JSON.stringify({ source: trace.source, skips: trace.skips, stats }) : statsText(trace, stats),
      );
      return 0;
    }
    const { capacities, configured } = wrapRange(() => mrcCapacities(trace, { sizes, capacity }));
    const curves = wrapRange(() => missRatioCurves(trace, capacities));
    console.log(
      json
        ? JSON.stringify({
            source: trace.source,
            skips: trace.skips,
            configuredCapacity: configured,
            ...curves,
          })
        : mrcText(trace, curves, configured),
    );
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      return refuseUsage("trace", error.message);
    }
    throw error;
  }
}

/** A RangeError of the statistics or curves (a bad --sizes, a trace with no reads) as a usage error. */
function wrapRange<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
