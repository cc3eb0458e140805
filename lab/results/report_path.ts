/**
 * Where a run's HTML report goes: beside its CSV as `<stem>.html`, unless that file is another experiment's
 * report (several experiments can share one `--out` CSV) or not a cachelab report at all; then a name of its
 * own. A page records its experiments in a `<meta name="cachelab-experiments">` tag near its top.
 */
import { closeSync, existsSync, openSync, readSync } from "node:fs";

export const EXPERIMENTS_META = "cachelab-experiments";

/** The tag a page records its experiments in (names kept to [A-Za-z0-9_.-], as experiment file names are). */
export function experimentsMeta(experiments: string[]): string {
  const names = experiments.map((name) => name.replace(/[^A-Za-z0-9_.-]/g, "_"));
  return `<meta name="${EXPERIMENTS_META}" content="${names.join(",")}">`;
}

/** The experiments an HTML file records (its first 4 KiB are read), or null when it records none. */
export function recordedExperiments(path: string): string[] | null {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(4096);
    const text = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString("utf8");
    const match = new RegExp(`<meta name="${EXPERIMENTS_META}" content="([^"]*)">`).exec(text);
    return match ? (match[1] as string).split(",") : null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The report path for a run of `experiment` whose rows went to `csvPath`: the first of `<stem>.html`,
 * `<stem>.<experiment>.html`, `<stem>.<experiment>.2.html`, … that is free or this experiment's own report.
 * `notice` says when it is not `<stem>.html`, and why.
 */
export function runReportPath(csvPath: string, experiment: string): { path: string; notice: string | null } {
  const stem = csvPath.replace(/\.csv$/, "");
  const preferred = `${stem}.html`;
  const ours = (path: string) => {
    if (!existsSync(path)) return true;
    const recorded = recordedExperiments(path);
    return recorded !== null && recorded.length === 1 && recorded[0] === experiment;
  };
  if (ours(preferred)) return { path: preferred, notice: null };
  for (let n = 1; ; n++) {
    const path = n === 1 ? `${stem}.${experiment}.html` : `${stem}.${experiment}.${n}.html`;
    if (!ours(path)) continue;
    const recorded = recordedExperiments(preferred);
    const holder =
      recorded === null ? "is not a cachelab run report" : `is the report of ${recorded.join(", ")}`;
    return { path, notice: `${preferred} ${holder}: left as it is; this run's report goes to ${path}` };
  }
}
