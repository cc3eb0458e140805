/**
 * Runs oha 1.15 with `--db-url`, then turns its per-request sqlite table into text the parser reads, with the
 * absolute instant its times count from.
 *
 *   bun lab/load/tools/oha_runner.ts <oha binary> <oha arguments…>   (cwd: the run directory)
 *
 * oha's table (src/db.rs; one row per answered request, any status; transport errors are not stored):
 *   url TEXT, start REAL, start_latency_correction REAL NULL, end REAL, duration REAL, status INTEGER,
 *   len_bytes INTEGER, run INTEGER
 * `start`, `start_latency_correction` and `end` are seconds since oha's own start instant (a monotonic
 * Instant taken after it has read its URL list and resolved the host); `run` is the Unix second of that
 * instant, truncated, so it places the run only to within a second. `start_latency_correction` is, under
 * `--latency-correction` (null without it), the instant oha's rate ticker fired for the request (it sleeps
 * until start + i/q, so its schedule unless the ticker itself runs late; src/client.rs), which may be long
 * before `start` when every connection is busy; `duration` is then end − that tick.
 *
 * The absolute start: oha creates its `-o` file (File::create) immediately before it reads the clock for
 * `run` and takes its start instant (src/lib.rs `run`), after reading the URL list, which takes 0.5 s for a
 * million lines (measured): the spawn time would be early by that much. The runner takes the file's birth
 * time (statx) as the start, µs before oha's; where the filesystem keeps none (Node's stat then reports 0 or
 * the ctime, both outside the window checked), the instant the runner saw the file appear (inotify; 2–5 ms
 * after the birth time, measured).
 */

import { Database } from "bun:sqlite";
import { readdirSync, statSync, watch, writeFileSync } from "node:fs";

/** oha's JSON summary (`-o`): its creation marks oha's start. */
export const OHA_OUTPUT = "oha.json";
/** oha's sqlite file (`--db-url`). */
export const OHA_DB = "oha.db";
/** One line per answered request: `start,start_latency_correction,duration,status`, as oha stored them. */
export const OHA_REQUESTS = "oha-requests.csv";
/** The instant oha's relative times count from (OhaStart). */
export const OHA_START = "oha-start.json";
export const OHA_REQUESTS_HEADER = "start,start_latency_correction,duration,status";

export interface OhaStart {
  /** Epoch ms at which oha created its `-o` file: its start instant (see `startedBy`). */
  startedAtMs: number;
  /** `birthtime`: the file's birth time, µs early; `watch`: when the runner saw it appear, a few ms late. */
  startedBy: "birthtime" | "watch";
  /** Epoch ms just before the runner spawned oha (earlier by oha's start-up: reading its URL list). */
  spawnedAtMs: number;
  /** The db's `run` column (oha's start, Unix seconds, truncated); null when no request was answered. */
  run: number | null;
}

interface Row {
  start: number;
  start_latency_correction: number | null;
  duration: number;
  status: number;
}

/** The db's rows as text, in oha's insertion order, and its one `run` value. */
export function dumpRequests(dbPath: string): { text: string; run: number | null; rows: number } {
  const db = new Database(dbPath, { readonly: true });
  try {
    const runs = db.query("select distinct run from oha").all() as { run: number }[];
    if (runs.length > 1) {
      throw new RangeError(
        `Cannot read ${dbPath}: one run expected: received runs ${runs.map((r) => r.run)}`,
      );
    }
    const lines = [OHA_REQUESTS_HEADER];
    let rows = 0;
    for (const row of db
      .query("select start, start_latency_correction, duration, status from oha order by rowid")
      .iterate() as IterableIterator<Row>) {
      lines.push(`${row.start},${row.start_latency_correction ?? ""},${row.duration},${row.status}`);
      rows++;
    }
    return { text: `${lines.join("\n")}\n`, run: runs[0]?.run ?? null, rows };
  } finally {
    db.close();
  }
}

async function main(args: string[]): Promise<number> {
  const [binary, ...ohaArgs] = args;
  if (binary === undefined || !ohaArgs.includes(OHA_OUTPUT) || !ohaArgs.includes(OHA_DB)) {
    console.error(`Usage: bun oha_runner.ts <oha> <arguments with -o ${OHA_OUTPUT} and --db-url ${OHA_DB}>`);
    return 2;
  }
  if (readdirSync(".").includes(OHA_OUTPUT)) {
    console.error(`Cannot run oha: ${OHA_OUTPUT} already exists, so its creation cannot mark oha's start`);
    return 2;
  }
  let seenAtMs: number | null = null;
  const watcher = watch(".", (_event, name) => {
    if (name === OHA_OUTPUT && seenAtMs === null) seenAtMs = performance.timeOrigin + performance.now();
  });
  const spawnedAtMs = performance.timeOrigin + performance.now();
  const proc = Bun.spawn([binary, ...ohaArgs], { stdin: "ignore", stdout: "inherit", stderr: "inherit" });
  const exitCode = await proc.exited;
  watcher.close();
  if (exitCode !== 0) return exitCode ?? 1;
  if (seenAtMs === null) {
    console.error(`Cannot place oha's times: no creation of ${OHA_OUTPUT} was seen`);
    return 1;
  }
  const birthMs = statSync(OHA_OUTPUT).birthtimeMs;
  const born = birthMs >= spawnedAtMs && birthMs <= seenAtMs;
  const { text, run } = dumpRequests(OHA_DB);
  writeFileSync(OHA_REQUESTS, text);
  const start: OhaStart = {
    startedAtMs: born ? birthMs : seenAtMs,
    startedBy: born ? "birthtime" : "watch",
    spawnedAtMs,
    run,
  };
  writeFileSync(OHA_START, `${JSON.stringify(start)}\n`);
  return 0;
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
