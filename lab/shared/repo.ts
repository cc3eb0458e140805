/** The repository's root folder, for the paths the lab reads and writes (results/, experiments/, server.ts). */
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "..", "..");

/**
 * Where the load tools' raw output goes, a folder per run: CACHELAB_RAW_DIR, or results/raw. The tests set it
 * to a temporary folder of their own (lab/shared/test_preload.ts), which they remove.
 */
export function rawRoot(): string {
  return process.env.CACHELAB_RAW_DIR || join(REPO_ROOT, "results", "raw");
}
