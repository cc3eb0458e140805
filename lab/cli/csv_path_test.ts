import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { UsageError } from "./args.ts";
import { checkCsvPath } from "./csv_path.ts";

function tempDir(): string {
  return mkdtempSync(join(testTmpdir(), "cachelab-csv-path-"));
}

/** Bad paths and what the refusal says; /sys refuses a new file even to root. */
function badPaths(dir: string): [string, string][] {
  mkdirSync(join(dir, "folder.csv"));
  return [
    [join(dir, "rows.txt"), "a results file is named <name>.csv"],
    [join(dir, "rows.timeline.csv"), "<name>.timeline.csv is the name of the per-second file"],
    [join(dir, "rows.curves.csv"), "<name>.curves.csv is the name of the replayed-curves file"],
    [join(dir, "rows.capacities.csv"), "<name>.capacities.csv is the name of the capacity search's file"],
    [join(dir, "missing", "rows.csv"), `the folder ${join(dir, "missing")} does not exist`],
    ["/sys/kernel/rows.csv", "the folder /sys/kernel is not writable (EACCES)"],
    [join(dir, "folder.csv"), "it exists and is not a file"],
  ];
}

describe("checkCsvPath", () => {
  test("accepts a new or existing .csv in a writable folder, and leaves nothing behind", () => {
    const dir = tempDir();
    expect(checkCsvPath("out", join(dir, "new.csv"))).toBe(join(dir, "new.csv"));
    writeFileSync(join(dir, "old.csv"), "a\n");
    expect(checkCsvPath("out", join(dir, "old.csv"))).toBe(join(dir, "old.csv"));
    expect(readdirSync(dir)).toEqual(["old.csv"]); // the writability probe is gone
  });

  test("refuses a path that is not .csv, a timeline name, a folder, a missing or unwritable folder", () => {
    for (const [path, message] of badPaths(tempDir())) {
      expect(() => checkCsvPath("out", path)).toThrow(UsageError);
      expect(() => checkCsvPath("out", path)).toThrow(`Cannot use --out: ${message}`);
      expect(() => checkCsvPath("out", path)).toThrow(`: received ${path}`);
    }
  });
});

describe("a bad results path stops the command before anything runs", () => {
  test("bun run experiment --out exits 2 before any service starts or any row is written", async () => {
    const cli = join(import.meta.dir, "experiment.ts");
    for (const [path, message] of badPaths(tempDir())) {
      const proc = Bun.spawn(["bun", cli, "quickstart", "--out", path], { stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr] = [
        await new Response(proc.stdout).text(),
        await new Response(proc.stderr).text(),
      ];
      expect({ path, code: await proc.exited }).toEqual({ path, code: 2 });
      expect(stderr.startsWith(`Cannot use --out: ${message}`)).toBe(true);
      expect(stderr).not.toContain("rows go to");
      expect(stdout).toBe("");
    }
  });

  test("bun run attack --csv exits 2 before a request is sent or raw output is written", async () => {
    let requests = 0;
    const server = Bun.serve({
      port: 0,
      fetch: () => {
        requests++;
        return new Response("{}");
      },
    });
    try {
      const cli = join(import.meta.dir, "attack.ts");
      const dir = tempDir();
      for (const [path, message] of badPaths(dir)) {
        const raw = join(dir, "raw");
        const args = ["--url", `${server.url}products/{id}`, "--rate", "5", "--duration", "1s", "--out", raw];
        const proc = Bun.spawn(["bun", cli, ...args, "--csv", path], { stdout: "pipe", stderr: "pipe" });
        const stderr = await new Response(proc.stderr).text();
        expect({ path, code: await proc.exited }).toEqual({ path, code: 2 });
        expect(stderr.startsWith(`Cannot use --csv: ${message}`)).toBe(true);
        expect(existsSync(raw)).toBe(false);
      }
      expect(requests).toBe(0);
    } finally {
      server.stop(true);
    }
  });
});
