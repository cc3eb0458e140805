import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";
import { LAB_FILE_MAX_LINES, layoutProblems, SERVER_MAX_LINES, trackedTypeScript } from "./layout.ts";

const root = resolve(import.meta.dir, "..");

test("this repo's layout has no problem", () => {
  expect(layoutProblems(root, trackedTypeScript(root))).toEqual([]);
});

test("each layout rule fires on a tree that breaks it", () => {
  const dir = mkdtempSync(join(testTmpdir(), "cachelab-layout-"));
  const files: Record<string, string> = {
    "server.ts": `import { a } from "./lab/a/a.ts";\n${"//\n".repeat(SERVER_MAX_LINES)}`,
    "lab/a/a.ts": `import { b } from "./b.ts";\nexport const a = 1;\n`,
    "lab/a/b.ts": `import { a } from "./a.ts";\nimport type { T } from "../c/t.ts";\nexport const b = 2;\n`,
    "lab/c/t.ts": `import type { b } from "../a/b.ts";\nexport type T = 1;\n`,
    "lab/d/x.ts": `export const run = () => import("./y.ts");\n`,
    "lab/d/y.ts": `import { run } from "./x.ts";\n`,
    "lab/c/a.ts": `import { x } from "../../server.ts";\n`,
    "lab/c/long.ts": "//\n".repeat(LAB_FILE_MAX_LINES + 1),
    "lab/c/long_test.ts": "//\n".repeat(LAB_FILE_MAX_LINES + 2),
  };
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  expect(layoutProblems(dir, Object.keys(files)).sort()).toEqual(
    [
      `lab/c/long.ts has ${LAB_FILE_MAX_LINES + 1} lines: a lab file holds at most ${LAB_FILE_MAX_LINES}`,
      `lab/c/long_test.ts has ${LAB_FILE_MAX_LINES + 2} lines: a lab file holds at most ${LAB_FILE_MAX_LINES}`,
      "2 lab files are named a.ts: lab/a/a.ts, lab/c/a.ts",
      "import cycle: lab/a/a.ts → lab/a/b.ts",
      "import cycle: lab/a/b.ts → lab/c/t.ts", // type-only imports count
      "import cycle: lab/d/x.ts → lab/d/y.ts", // and so does import("…")
      `server.ts has ${SERVER_MAX_LINES + 1} lines: the product reads in ${SERVER_MAX_LINES}`,
      "server.ts imports lab/a/a.ts: the product imports nothing of the lab",
      "lab/c/a.ts imports server.ts: the lab reads the server through server/",
    ].sort(),
  );
});
