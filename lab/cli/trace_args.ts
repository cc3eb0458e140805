/** The trace flags `bun run experiment`, `bun run attack` and `bun run trace` share, parsed once. */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { TraceKeys } from "../plan/attack_plan.ts";
import { TRACE_FORMATS, type TraceFormat } from "../trace/trace.ts";
import { UsageError } from "./args.ts";

export const TRACE_OPTIONS = {
  trace: { type: "string" },
  "trace-format": { type: "string" },
  "trace-columns": { type: "string" },
  route: { type: "string" },
  "skip-bad-lines": { type: "boolean", default: false },
  "trace-pace": { type: "string" },
  speed: { type: "string" },
} as const;

/** The trace flags and what each does, one entry per line of the usage. */
const TRACE_FLAGS: [flag: string, ...lines: string[]][] = [
  ["--trace FILE", "replay FILE's keys in its order instead of the key draws (.gz and .zst read as streams)"],
  ["--trace-format F", `${TRACE_FORMATS.join(" | ")} (default: detected from the name and first lines)`],
  ["--trace-columns SPEC", "delimited: time-col=1,key-col=2,size-col=3,op-col=4,has-header=true,delimiter=,"],
  ["--route REGEX", "access-log: the path's key is the first capture, e.g. '^/api/products/(\\d+)'"],
  ["--skip-bad-lines", "count and skip malformed lines instead of stopping at the first"],
  [
    "--trace-pace P",
    "fixed (default: the attack's rate, the trace's order) | recorded (the trace's own",
    "per-second rates from its timestamps, a ramping arrival rate: k6)",
  ],
  ["--speed X", "with recorded: X times the recorded rate (default 1)"],
];

/** The trace flags' usage lines, each description starting at `column` (the command's own usage's). */
export function traceUsage(column = 24): string {
  return TRACE_FLAGS.map(([flag, ...lines]) =>
    lines.map((line, i) => (i === 0 ? `  ${flag}`.padEnd(column) : " ".repeat(column)) + line).join("\n"),
  ).join("\n");
}

/** `--trace-format`'s value as a format (undefined: detect it); a UsageError naming the formats. */
export function parseTraceFormat(raw: unknown): TraceFormat | undefined {
  if (raw === undefined) return undefined;
  if (!(TRACE_FORMATS as readonly unknown[]).includes(raw)) {
    throw new UsageError(
      `Cannot parse --trace-format: expected one of ${TRACE_FORMATS.join(", ")}: received ${String(raw)}`,
    );
  }
  return raw as TraceFormat;
}

/** The trace the flags name, its path made absolute; undefined without `--trace`. */
export function traceKeysFrom(values: Record<string, unknown>): TraceKeys | undefined {
  const file = values.trace;
  const others = ["trace-format", "trace-columns", "route", "trace-pace", "speed"].filter(
    (flag) => values[flag] !== undefined,
  );
  if (typeof file !== "string") {
    if (others.length > 0 || values["skip-bad-lines"] === true) {
      throw new UsageError(`Cannot use --${others[0] ?? "skip-bad-lines"} without --trace FILE`);
    }
    return undefined;
  }
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new UsageError(`Cannot read --trace: no such file: received ${file}`);
  }
  const format = parseTraceFormat(values["trace-format"]);
  const pace = values["trace-pace"];
  if (pace !== undefined && pace !== "fixed" && pace !== "recorded") {
    throw new UsageError(`Cannot parse --trace-pace: expected fixed or recorded: received ${String(pace)}`);
  }
  const speed = values.speed === undefined ? undefined : Number(values.speed);
  if (speed !== undefined && (pace !== "recorded" || !(speed > 0 && Number.isFinite(speed)))) {
    throw new UsageError(
      `Cannot parse --speed: expected a number > 0 with --trace-pace recorded: received ${String(values.speed)}`,
    );
  }
  return {
    kind: "trace",
    file: path,
    ...(pace === "recorded" ? { pace: "recorded" as const } : {}),
    ...(speed !== undefined ? { speed } : {}),
    ...(format !== undefined ? { format } : {}),
    ...(typeof values["trace-columns"] === "string" ? { columns: values["trace-columns"] } : {}),
    ...(typeof values.route === "string" ? { route: values.route } : {}),
    ...(values["skip-bad-lines"] === true ? { skipBadLines: true } : {}),
  };
}
