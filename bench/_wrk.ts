/**
 * wrk as the benches run it: 1 thread, a closed model over `connections`, a random id of 1..keys per request
 * (a Lua script, seeded), every error counted from wrk's own summary: a run with any is refused.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** A run's successful responses and how long it lasted, as wrk measured it. */
export interface WrkRun {
  ok: number;
  seconds: number;
}

export interface WrkOptions {
  connections: number;
  durationS: number;
  keys: number;
  /** A folder for the Lua script. */
  work: string;
  /** Put before `wrk` (e.g. `taskset -c 1`). */
  prefix?: string[];
}

export function wrk(origin: string, options: WrkOptions): WrkRun {
  const script = join(options.work, "ids.lua");
  writeFileSync(
    script,
    `math.randomseed(42)
request = function() return wrk.format(nil, "/products/" .. math.random(1, ${options.keys})) end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("CACHELAB %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout))
end`,
  );
  const argv = [
    ...(options.prefix ?? []),
    "wrk",
    "-t",
    "1",
    "-c",
    String(options.connections),
    "-d",
    `${options.durationS}s`,
    "--timeout",
    "5s",
    "-s",
    script,
    origin,
  ];
  const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  const out = proc.stdout.toString();
  if (proc.exitCode !== 0) throw new Error(`Cannot run wrk: exit ${proc.exitCode}: ${proc.stderr}`);
  const match = /CACHELAB (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
  if (!match) throw new Error(`Cannot read wrk output: ${out}`);
  const [requests, durationUs, ...errors] = match.slice(1).map(Number) as [number, number, ...number[]];
  const failed = errors.reduce((a, b) => a + b, 0);
  if (failed > 0) throw new Error(`Cannot trust the run: ${failed} wrk errors (${errors.join("/")})`);
  return { ok: requests, seconds: durationUs / 1e6 };
}
