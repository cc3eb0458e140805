/**
 * Loaded before every test file (bunfig.toml): the runs the tests make write their raw output into a
 * temporary folder, removed when the test process exits, not into the repository's results/raw (gigabytes a run).
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

if (!process.env.CACHELAB_RAW_DIR) {
  const dir = mkdtempSync(join(tmpdir(), "cachelab-test-raw-"));
  process.env.CACHELAB_RAW_DIR = dir;
  // In a preload, afterAll runs once, after every file (bun test fires no process "exit" event).
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
}
