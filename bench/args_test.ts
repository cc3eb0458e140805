import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";

/** Every bench package.json runs, and its file. */
const scripts = (await Bun.file(join(REPO_ROOT, "package.json")).json()).scripts as Record<string, string>;
const BENCHES = Object.entries(scripts).filter(([name]) => name.startsWith("bench:"));

async function run(script: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(["bun", ...script.replace(/^bun /, "").split(" "), ...args], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: {
      ...process.env,
      DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
      REDIS_URL: "redis://127.0.0.1:1",
      ...env,
    },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

describe("the benches' flags", () => {
  test("package.json runs every bench under bench/", () => {
    const files = readdirSync(join(REPO_ROOT, "bench")).filter(
      (f) => /^[a-z].*\.ts$/.test(f) && !f.endsWith("_test.ts"),
    );
    expect(BENCHES.map(([, script]) => script.replace(/^bun bench\//, "")).sort()).toEqual(files.sort());
  });

  for (const [name, script] of BENCHES) {
    test(`${name}: --help and -h print the usage, exit 0, before anything starts; an unknown flag exits 2`, async () => {
      const [long, short, bad] = await Promise.all([
        run(script, ["--help"]),
        run(script, ["-h"]),
        run(script, ["--bogus"]),
      ]);
      for (const help of [long, short]) {
        expect(help.code).toBe(0);
        expect(help.stdout).toStartWith(`usage: bun run ${name}`);
      }
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--bogus");
      expect(bad.stderr).toContain(`usage: bun run ${name}`);
    });
  }
});

describe("bench:redis-behind-l1's own flags", () => {
  test("an unknown --client lists the valid ones, a --work-us below 0 is refused, each exit 2", async () => {
    const [client, work] = await Promise.all([
      run("bun bench/redis_behind_l1.ts", ["--client", "hiredis"]),
      run("bun bench/redis_behind_l1.ts", ["--work-us=-5"]),
    ]);
    expect(client.code).toBe(2);
    expect(client.stderr).toContain("Unknown --client hiredis: choose one of ioredis, bun");
    expect(work.code).toBe(2);
    expect(work.stderr).toContain("--work-us must be a whole number of microseconds, 0 or more: received -5");
  });

  test("--split without perf on PATH says what it needs, exit 1, before starting anything", async () => {
    const bin = mkdtempSync(join(testTmpdir(), "cachelab-no-perf-"));
    for (const tool of ["bun", "vegeta"]) symlinkSync(Bun.which(tool) as string, join(bin, tool));
    const split = await run("bun bench/redis_behind_l1.ts", ["--split"], { PATH: bin });
    expect(split.code).toBe(1);
    expect(split.stderr).toContain(
      "Cannot split the GETs: --split needs perf (Debian's linux-perf): received none on PATH",
    );
  });
});
