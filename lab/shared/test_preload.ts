/**
 * Loaded before every test file (bunfig.toml): the runs the tests make write their raw output into a
 * temporary folder, removed when the test process exits, not into the repository's results/raw (gigabytes a run).
 * And their rows do not judge the CPU others use (lab/cell/other_cpu.ts): the suite must pass on a busy
 * machine, and what a test run measures is never a result; other_cpu_test.ts tests the check itself.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Each test's temporary folders go in one of this process's (test_tmpdir.ts), removed after the last file (in
// a preload, afterAll runs once, after every file: bun test fires no process "exit" event).
const testTmp = mkdtempSync(join(tmpdir(), "cachelab-test-"));
process.env.CACHELAB_TEST_TMP = testTmp;
afterAll(() => rmSync(testTmp, { recursive: true, force: true }));

// The runs' raw output too (a child test process keeps its parent's, which outlives it).
process.env.CACHELAB_RAW_DIR ||= mkdtempSync(join(testTmp, "raw-"));

process.env.CACHELAB_OTHER_CPU_LIMIT ??= "off";
