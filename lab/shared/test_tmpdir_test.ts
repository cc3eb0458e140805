import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./repo.ts";
import { testTmpdir } from "./test_tmpdir.ts";

test("a test process leaves no folder behind in the temporary folder it was given", () => {
  // The child's TMPDIR: empty before, and to be empty after, whatever its tests made there.
  const given = mkdtempSync(join(tmpdir(), "cachelab-tmpdir-check-"));
  const fixture = join(mkdtempSync(join(testTmpdir(), "cachelab-tmpdir-fixture-")), "fixture_test.ts");
  writeFileSync(
    fixture,
    `import { test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from ${JSON.stringify(join(REPO_ROOT, "lab/shared/test_tmpdir.ts"))};
test("makes a folder", () => {
  const dir = mkdtempSync(join(testTmpdir(), "made-"));
  writeFileSync(join(dir, "file"), "x");
  console.log("MADE " + dir);
});`,
  );
  try {
    const { CACHELAB_RAW_DIR: _raw, CACHELAB_TEST_TMP: _tmp, ...env } = process.env;
    const run = Bun.spawnSync(["bun", "test", fixture], { cwd: REPO_ROOT, env: { ...env, TMPDIR: given } });
    const output = `${run.stdout.toString()}${run.stderr.toString()}`;
    expect(run.exitCode, output).toBe(0);
    expect(output).toContain(`MADE ${given}/`);
    expect(readdirSync(given)).toEqual([]);
  } finally {
    rmSync(given, { recursive: true, force: true });
  }
});
