/**
 * A results CSV named on the command line (`--out`, `--csv`), checked before anything runs: a bad path is a
 * usage error (exit 2) before a service starts or a tool sends a request, never an exception after the run.
 */
import { closeSync, existsSync, openSync, statSync, unlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { UsageError } from "./args.ts";

/** The lab's own results folder: created when missing, as the default rows' place. */
const RESULTS_DIR = join(REPO_ROOT, "results");

/** Whether this process can create a file in `dir` (a real try: root passes every access() check). */
function canCreateIn(dir: string): string | null {
  const probe = join(dir, `.cachelab-probe-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);
  try {
    closeSync(openSync(probe, "wx"));
    unlinkSync(probe);
    return null;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
}

/**
 * `raw` as an absolute path a results CSV can be appended at; throws UsageError naming what is wrong:
 * not `.csv`, a timeline, curves or capacities file's name, a folder, or a folder that does not exist or cannot be written.
 */
export function checkCsvPath(flag: string, raw: string): string {
  const refuse = (detail: string) => new UsageError(`Cannot use --${flag}: ${detail}: received ${raw}`);
  if (!raw.endsWith(".csv") || raw.endsWith("/.csv")) throw refuse("a results file is named <name>.csv");
  if (raw.endsWith(".timeline.csv")) {
    throw refuse("<name>.timeline.csv is the name of the per-second file the lab writes beside <name>.csv");
  }
  if (raw.endsWith(".curves.csv")) {
    throw refuse(
      "<name>.curves.csv is the name of the replayed-curves file the lab writes beside <name>.csv",
    );
  }
  if (raw.endsWith(".capacities.csv")) {
    throw refuse(
      "<name>.capacities.csv is the name of the capacity search's file the lab writes beside <name>.csv",
    );
  }
  const path = resolve(raw);
  if (existsSync(path)) {
    if (!statSync(path).isFile()) throw refuse("it exists and is not a file");
    try {
      // O_APPEND opens without touching content or mtime; it fails as the append would (EACCES, EROFS).
      closeSync(openSync(path, "a"));
    } catch (error) {
      throw refuse(`it cannot be appended to (${(error as NodeJS.ErrnoException).code})`);
    }
    return path;
  }
  const dir = dirname(path);
  if (!existsSync(dir)) {
    if (dir === RESULTS_DIR) return path;
    throw refuse(`the folder ${dir} does not exist (create it first)`);
  }
  if (!statSync(dir).isDirectory()) throw refuse(`${dir} is not a folder`);
  const cannot = canCreateIn(dir);
  if (cannot !== null) throw refuse(`the folder ${dir} is not writable (${cannot})`);
  return path;
}
