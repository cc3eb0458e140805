/**
 * `bun run experiment … --redis-server`: its values, its refusals (one line, exit 2), and the plan a dry run
 * prints for Valkey, with the valkey-server installed and without one.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tempCsv } from "../run/run_testing.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { parseCommand } from "./experiment.ts";

describe("--redis-server", () => {
  const cli = join(import.meta.dir, "experiment.ts");
  const commandsTmp = mkdtempSync(join(testTmpdir(), "cachelab-experiment-valkey-test-"));
  const env = { ...process.env, TMPDIR: commandsTmp };
  afterAll(() => rmSync(commandsTmp, { recursive: true, force: true }));

  test("an unknown server, or Valkey with --redis-cluster or --server-url: one line naming why, exit 2", async () => {
    const cases: [string[], string][] = [
      [
        ["quickstart", "--redis-server", "keydb"],
        "Cannot use Redis server keydb: expected one of redis, valkey",
      ],
      [
        ["quickstart", "--redis-server", "valkey", "--redis-cluster"],
        "Cannot combine --redis-server valkey with --redis-cluster: the lab's cluster is of redis-server nodes",
      ],
      [
        ["quickstart", "--redis-server", "valkey", "--server-url", "http://127.0.0.1:1"],
        "Cannot combine --redis-server valkey with --server-url: the lab puts on Valkey only servers it starts",
      ],
    ];
    for (const [args, message] of cases) {
      const proc = Bun.spawn([process.execPath, cli, ...args], { env, stderr: "pipe" });
      const stderr = await new Response(proc.stderr).text();
      expect({ args, code: await proc.exited }).toEqual({ args, code: 2 });
      expect(stderr).toBe(`${message}\nsee \`bun run experiment --help\`\n`);
    }
  });

  test("--redis-server: redis by default, valkey on request; a dry run names the valkey-server a run would use", async () => {
    const plain = await parseCommand(["quickstart"]);
    const onValkey = await parseCommand(["quickstart", "--redis-server", "valkey"]);
    const onRedis = await parseCommand(["quickstart", "--redis-server", "redis"]);
    expect(
      [plain, onValkey, onRedis].map((c) => (c.kind === "run" ? c.options.redisServer : c.kind)),
    ).toEqual([undefined, "valkey", undefined]);
    const out = tempCsv();
    const proc = Bun.spawn(
      ["bun", cli, "quickstart", "--redis-server", "valkey", "--dry-run", "--out", out],
      {
        env,
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [output, stderr] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    expect({ code: await proc.exited, stderr }).toEqual({ code: 0, stderr: "" });
    expect(output).toMatch(
      /^redis: every Redis tier \(redis, two_tier, tracking\) on Valkey \(--redis-server valkey\), REDIS_URL on every server: the lab's own valkey-server beside its Redis, \/\S+\/valkey-server \(Valkey server v=9\.1\.2\), started once/m,
    );
    expect(existsSync(out)).toBe(false);
    // Without one installed, the plan says that a real run stops, and why.
    const path = (process.env.PATH ?? "")
      .split(":")
      .filter((dir) => !existsSync(join(dir, "valkey-server")))
      .join(":");
    const bare = Bun.spawn(
      [process.execPath, cli, "quickstart", "--redis-server", "valkey", "--dry-run", "--out", out],
      {
        env: { ...env, VALKEY_VENV: commandsTmp, VALKEY_SERVER: "", PATH: path },
        stdout: "pipe",
      },
    );
    const bareOutput = await new Response(bare.stdout).text();
    expect(await bare.exited).toBe(0);
    expect(bareOutput).toContain("on every server: none, a real run stops: valkey-server is not installed");
  });
});
