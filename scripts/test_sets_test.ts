import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { FULL_ONLY, testFiles, testSet } from "./test_sets.ts";

test("quick and full are every test file, each once; every long one named exists", () => {
  const all = testFiles();
  const quick = testSet("quick");
  const full = testSet("full");
  expect([...quick, ...full].sort()).toEqual(all);
  expect(quick.filter((file) => full.includes(file))).toEqual([]);
  expect(FULL_ONLY.filter((file) => !existsSync(join(REPO_ROOT, file)))).toEqual([]);
  expect(full).toHaveLength(FULL_ONLY.length);
  expect(quick).toContain("scripts/test_sets_test.ts");
});

test("package.json's check runs the quick set and check:full the long one", async () => {
  const { scripts } = (await Bun.file(join(REPO_ROOT, "package.json")).json()) as {
    scripts: Record<string, string>;
  };
  expect(scripts.check).toEndWith("bun scripts/test_sets.ts quick");
  expect(scripts["check:full"]).toEndWith("bun scripts/test_sets.ts full");
});

test("an unknown set is refused with exit 2, naming the sets", async () => {
  const proc = Bun.spawn(["bun", join(REPO_ROOT, "scripts", "test_sets.ts"), "all"], { stderr: "pipe" });
  expect(await proc.exited).toBe(2);
  expect(await new Response(proc.stderr).text()).toBe(
    "Cannot run the tests: expected a set, quick or full: received all\n",
  );
});
