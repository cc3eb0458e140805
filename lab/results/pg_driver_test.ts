import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { pgDriverDescription } from "./pg_driver.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A checkout with postgres at `version` installed and package.json's patchedDependencies as given. */
function checkout(version: string, patched?: Record<string, string>): string {
  const root = mkdtempSync(join(testTmpdir(), "cachelab-pg-driver-"));
  roots.push(root);
  mkdirSync(join(root, "node_modules", "postgres"), { recursive: true });
  writeFileSync(join(root, "node_modules", "postgres", "package.json"), JSON.stringify({ version }));
  writeFileSync(join(root, "package.json"), JSON.stringify(patched ? { patchedDependencies: patched } : {}));
  return root;
}

test("a row names postgres.js's version and the patch installed with it", () => {
  expect(pgDriverDescription("postgres-js")).toBe(
    "postgres.js 3.4.9 + patches/postgres@3.4.9.patch (drizzle named prepared statements)",
  );
  const root = checkout("3.4.9", { "postgres@3.4.9": "patches/postgres@3.4.9.patch" });
  expect(pgDriverDescription("postgres-js", root)).toContain("3.4.9 + patches/postgres@3.4.9.patch");
});

test("no patch is named when none is applied to the installed version", () => {
  expect(pgDriverDescription("postgres-js", checkout("3.4.9"))).toBe(
    "postgres.js 3.4.9 (drizzle named prepared statements)",
  );
  const other = checkout("3.4.10", { "postgres@3.4.9": "patches/postgres@3.4.9.patch" });
  expect(pgDriverDescription("postgres-js", other)).toBe(
    "postgres.js 3.4.10 (drizzle named prepared statements)",
  );
});

test("Bun.SQL is named with Bun's version", () => {
  expect(pgDriverDescription("bun-sql")).toBe(`Bun.SQL (bun ${Bun.version}, prepare=true; drizzle bun-sql)`);
});
