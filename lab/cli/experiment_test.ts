import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { experimentNames } from "../cli/experiment.ts";
import { readRows, tempCsv } from "../run/run_testing.ts";
import { portAnswers } from "../shared/ports.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { processesWorkingIn } from "../shared/testing.ts";

describe("experiment command", () => {
  const cli = join(import.meta.dir, "experiment.ts");

  test("--list prints every experiment with its question", async () => {
    const proc = Bun.spawn(["bun", cli, "--list"], { stdout: "pipe" });
    const text = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    for (const name of [
      "quickstart",
      "read_heavy",
      "cache_toggle",
      "cold_start",
      "saturation",
      "write_mix",
    ]) {
      expect(text).toContain(name);
    }
  });

  test("unknown experiment, strategy, tool or flag exits 2 listing the valid values", async () => {
    const cases: [string[], string][] = [
      // Every file in experiments/, in order.
      [["nope"], `expected one of ${experimentNames().join(", ")}\n`],
      [["quickstart", "--strategies", "memcached"], "expected one of none, local, redis, two_tier"],
      [["quickstart", "--tool", "ab"], "expected one of oha, vegeta, k6, wrk, autocannon"],
      [["quickstart", "--fast"], "Unknown option '--fast'"],
      [["quickstart", "--repeats", "0"], "--repeats"],
      [
        ["quickstart", "--server-apart", "--server-url", "http://127.0.0.1:1"],
        "Cannot combine --server-apart with --server-url",
      ],
      [["quickstart", "--server-url", "http://127.0.0.1:1"], "Cannot reach the server at http://127.0.0.1:1"],
      [["quickstart", "--prometheus", "http://127.0.0.1:1"], "Cannot reach Prometheus at http://127.0.0.1:1"],
      [
        ["quickstart", "--prometheus-targets", "t.json"],
        "Cannot use --prometheus-targets without --prometheus",
      ],
    ];
    for (const [args, message] of cases) {
      const proc = Bun.spawn(["bun", cli, ...args], { stderr: "pipe" });
      const stderr = await new Response(proc.stderr).text();
      expect({ args, code: await proc.exited }).toEqual({ args, code: 2 });
      expect(stderr).toContain(message);
    }
  });

  test("every experiment file runs as a script, with the same options and plan as bun run experiment", async () => {
    const dryRun = async (argv: string[]) => {
      const proc = Bun.spawn(argv, {
        cwd: join(import.meta.dir, "..", ".."),
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      // Each run picks its own free port; everything else is the plan.
      return { code, output: `${stdout}${stderr}`.replaceAll(/(\/\/[\w.]+):\d+/g, "$1:PORT") };
    };
    for (const name of experimentNames()) {
      const options = ["--repeats", "1", "--dry-run", "--out", tempCsv()];
      const script = await dryRun(["bun", `experiments/${name}.ts`, ...options]);
      const command = await dryRun(["bun", "lab/cli/experiment.ts", name, ...options]);
      expect({ name, code: script.code }).toEqual({ name, code: 0 });
      expect(script.output).toContain(`experiment ${name}: `);
      expect(script.output).toBe(command.output);
    }
    const bad = await dryRun(["bun", "experiments/quickstart.ts", "--bogus"]);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain("usage: bun run experiment");
  }, 120_000);

  test("--dry-run prints the plan, the exact command line and an ETA, and writes nothing", async () => {
    const out = tempCsv();
    const proc = Bun.spawn(["bun", cli, "quickstart", "--dry-run", "--out", out], { stderr: "pipe" });
    const stderr = await new Response(proc.stderr).text();
    expect(await proc.exited).toBe(0);
    expect(stderr).toContain("command: ");
    expect(stderr).toContain("ETA ≈");
    expect(existsSync(out)).toBe(false);
  });

  describe("SIGINT", () => {
    let port: number | null = null;
    afterAll(async () => {
      if (port !== null) expect(await portAnswers(port)).toBe(false);
    });

    test("SIGINT mid-run exits 130, stops the server and the tool, and leaves only whole rows", async () => {
      const out = tempCsv();
      // vegeta runs as a pipeline (attack, report, encode): the whole process group must go, not just a shell.
      const args = [
        "quickstart",
        "--tool",
        "vegeta",
        "--strategies",
        "none,local",
        "--duration-s",
        "4",
        "--out",
        out,
      ];
      const proc = Bun.spawn(["bun", cli, ...args, "--rate-rps", "200"], { stderr: "pipe" });
      const decoder = new TextDecoder();
      let stderr = "";
      const reader = proc.stderr.getReader();
      while (!stderr.includes("cell 1/2")) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += decoder.decode(value);
        const match = /server: http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
        if (match) port = Number(match[1]);
      }
      await Bun.sleep(2_500); // into the second cell: its server is up and vegeta is attacking (warm-up)
      const tools = processesWorkingIn(join(REPO_ROOT, "results", "raw"));
      expect([...tools.values()]).toContain("vegeta");
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(130);
      // Right after the runner's exit: none of the tool's processes is left, not even a zombie for init to reap.
      expect([...tools].filter(([pid]) => existsSync(`/proc/${pid}`))).toEqual([]);
      const rows = readRows(out);
      expect(rows.map((row) => row.strategy)).toEqual(["none"]);
      expect(readFileSync(out, "utf8").endsWith("\n")).toBe(true);
      // No process is left working in this run's raw-output folder (where the tools run).
      const runDir = dirname(rows[0]?.raw_path ?? "/nonexistent/x");
      const leftovers = readdirSync("/proc")
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readlinkSync(`/proc/${pid}/cwd`).startsWith(runDir);
          } catch {
            return false;
          }
        });
      expect(leftovers).toEqual([]);
    });
  });
});
