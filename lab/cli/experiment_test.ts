import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { experimentNames, parseCommand } from "../cli/experiment.ts";
import { readRows, tempCsv } from "../run/run_testing.ts";
import { portAnswers } from "../shared/ports.ts";
import { rawRoot } from "../shared/repo.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { processesWorkingIn } from "../shared/testing.ts";

describe("experiment command", () => {
  const cli = join(import.meta.dir, "experiment.ts");
  // Where the runs put their printed commands' files (a folder each, in TMPDIR), removed after the tests.
  const commandsTmp = mkdtempSync(join(testTmpdir(), "cachelab-experiment-test-"));
  const env = { ...process.env, TMPDIR: commandsTmp };
  afterAll(() => rmSync(commandsTmp, { recursive: true, force: true }));

  test("--list prints every experiment with its question, the questions in one column", async () => {
    const proc = Bun.spawn(["bun", cli, "--list"], { stdout: "pipe" });
    const text = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    const lines = text.trimEnd().split("\n");
    expect(lines.map((line) => line.split(/ +/)[0])).toEqual(experimentNames());
    // Each question starts two spaces after the longest name, whatever the name before it.
    const column = Math.max(...experimentNames().map((name) => name.length)) + 2;
    for (const line of lines) expect(line.slice(column - 2, column + 1)).toMatch(/^ {2}\S$/);
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
      [["quickstart", "--fast"], "Cannot use --fast: no such option"],
      [["quickstart", "--repeats", "0"], "--repeats"],
      [
        ["quickstart", "--server-apart", "--server-url", "http://127.0.0.1:1"],
        "Cannot combine --server-apart with --server-url",
      ],
      [
        ["quickstart", "--redis-cluster", "--server-url", "http://127.0.0.1:1"],
        "Cannot combine --redis-cluster with --server-url",
      ],
      [["quickstart", "--server-url", "http://127.0.0.1:1"], "Cannot reach the server at http://127.0.0.1:1"],
      [["quickstart", "--prometheus", "http://127.0.0.1:1"], "Cannot reach Prometheus at http://127.0.0.1:1"],
      [
        ["quickstart", "--prometheus-targets", "t.json"],
        "Cannot use --prometheus-targets without --prometheus",
      ],
    ];
    for (const [args, message] of cases) {
      const proc = Bun.spawn(["bun", cli, ...args], { env, stderr: "pipe" });
      const stderr = await new Response(proc.stderr).text();
      expect({ args, code: await proc.exited }).toEqual({ args, code: 2 });
      expect(stderr).toContain(message);
    }
  });

  test("every experiment file runs as a script, with the same options and plan as bun run experiment", async () => {
    const dryRun = async (argv: string[]) => {
      const proc = Bun.spawn(argv, {
        cwd: join(import.meta.dir, "..", ".."),
        env,
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      // Each run picks its own free port and its commands' folder; everything else is the plan.
      const output = `${stdout}${stderr}`
        .replaceAll(/(\/\/[\w.]+):\d+/g, "$1:PORT")
        .replaceAll(/(cachelab-\w+-commands-)\w+/g, "$1DIR");
      return { code, output };
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
    expect(bad.output).toContain("see `bun run experiment --help`");
  }, 120_000);

  test("--dry-run prints the plan, the exact command line and an ETA, and writes no row", async () => {
    const out = tempCsv();
    const proc = Bun.spawn(["bun", cli, "quickstart", "--dry-run", "--out", out], { env, stdout: "pipe" });
    const output = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    // Its files only with --commands-dir (commands_test.ts pastes the command from there).
    expect(output).toContain(
      "  command, to paste as is; its files (--commands-dir DIR writes them, into DIR/",
    );
    expect(output).toContain("15 cells · 60 s of load · ETA ≈");
    // Three repeats, interleaved, the strategies' order turned by one each repeat.
    expect(output).toContain(
      "order, turned by one each repeat: r1 none local redis two_tier tracking · r2 local redis two_tier tracking none · r3 redis two_tier tracking none local",
    );
    expect(existsSync(out)).toBe(false);
  });

  test("every deployment flag reaches the run's options, decimals where they make sense", async () => {
    const command = await parseCommand([
      "quickstart",
      ...["--miss-cost-ms", "5", "--redis-rtt-ms", "0.5", "--no-base", "--payload-bytes", "2000"],
      ...["--instances", "2", "--l1-entries", "500", "--ttl-s", "1.5", "--l1-ttl-s", "0.25"],
      ...["--warmup-s", "0", "--pool", "4", "--cpu", "0.5"],
    ]);
    if (command.kind !== "run") throw new Error(`expected a run: received ${command.kind}`);
    expect(command.options).toMatchObject({
      missCostMs: 5,
      redisRttMs: 0.5,
      noBase: true,
      payloadBytes: 2_000,
      warmupS: 0,
      settings: {
        instances: 2,
        l1MaxEntries: 500,
        cacheTtlMs: 1_500,
        l1TtlMs: 250,
        pgPoolMax: 4,
        cpuLimit: 0.5,
      },
    });
    // Without them the experiment file's plan stands untouched.
    const plain = await parseCommand(["quickstart"]);
    if (plain.kind !== "run") throw new Error("expected a run");
    for (const key of ["missCostMs", "redisRttMs", "noBase", "payloadBytes", "warmupS", "settings"]) {
      expect(plain.options).not.toHaveProperty(key);
    }
  });

  test("--help lists every deployment flag", async () => {
    const proc = Bun.spawn(["bun", cli, "--help"], { stdout: "pipe" });
    const text = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    for (const flag of [
      "--miss-cost-ms N",
      "--redis-rtt-ms N",
      "--no-base",
      "--payload-bytes N",
      "--instances N",
      "--l1-entries N",
      "--ttl-s N",
      "--l1-ttl-s N",
      "--warmup-s N",
      "--pool N",
      "--cpu N",
    ]) {
      expect(text).toContain(`  ${flag}`);
    }
  });

  test("a bad deployment flag exits 2 with one message and the usage, never a stack trace", async () => {
    const cases: [string[], string][] = [
      [
        ["--miss-cost-ms", "abc"],
        "Cannot parse --miss-cost-ms: expected a decimal number from 0 to 60000, like 12 or 0.5: received abc",
      ],
      // Negative, joined or not, and huge: each says what is allowed (never parseArgs's "ambiguous").
      [["--miss-cost-ms=-1"], "Cannot parse --miss-cost-ms: expected a decimal number from 0 to 60000"],
      [["--miss-cost-ms", "-1"], "Cannot parse --miss-cost-ms: expected a decimal number from 0 to 60000"],
      [["--miss-cost-ms", "1e9"], "Cannot parse --miss-cost-ms: expected a decimal number from 0 to 60000"],
      [["--repeats", "-1"], "Cannot parse --repeats: expected a positive integer up to 100: received -1"],
      [["--repeats", "0"], "Cannot parse --repeats: expected a positive integer up to 100: received 0"],
      [
        ["--rate-rps", "99999999999999999999"],
        "Cannot parse --rate-rps: expected a positive integer up to 1000000: received 99999999999999999999",
      ],
      [
        ["--duration-s=-5"],
        "Cannot parse --duration-s: expected a positive integer up to 86400: received -5",
      ],
      [["--fast"], "Cannot use --fast: no such option"],
      [["--redis-rtt-ms", "1e3"], "Cannot parse --redis-rtt-ms: expected a decimal number"],
      [["--instances", "9"], "Cannot use --instances: expected 1..8 (the lab's most per cell): received 9"],
      [["--instances", "0"], "Cannot use --instances: expected 1..8"],
      [["--instances", "1.5"], "Cannot parse --instances: expected an integer: received 1.5"],
      [["--l1-entries", "0"], "Cannot use --l1-entries: expected 1..100000000: received 0"],
      [["--ttl-s", "0"], "Cannot use --ttl-s: expected 0.001..2147483.647 s: received 0"],
      [["--l1-ttl-s", "soon"], "Cannot parse --l1-ttl-s: expected a decimal number"],
      [["--warmup-s=-3"], "Cannot parse --warmup-s: expected an integer: received -3"],
      [["--pool", "1001"], "Cannot use --pool: expected 1..1000: received 1001"],
      [["--cpu", "0"], "Cannot use --cpu: expected 0.01.."],
      [["--cpu", "999"], "(this machine's CPUs): received 999"],
      [
        ["--payload-bytes", "100"],
        "Cannot use --payload-bytes: a product's other fields take up to 162 bytes of its body at 100000 rows, so a smaller body cannot be met: received 100",
      ],
      [
        ["--payload-bytes", "2000000"],
        "Cannot use --payload-bytes: expected at most 1048576: received 2000000",
      ],
      [
        ["--no-base"],
        "Cannot use --no-base without --miss-cost-ms or --redis-rtt-ms: only they add base cells",
      ],
      // A server the lab did not start: no proxy in front of its services, no setting of its process.
      ...(["miss-cost-ms", "redis-rtt-ms", "pool", "ttl-s", "l1-ttl-s", "l1-entries", "cpu"] as const).map(
        (flag): [string[], string] => [
          [`--${flag}`, "1", "--server-url", "http://127.0.0.1:1"],
          `Cannot combine --${flag} with --server-url: `,
        ],
      ),
      [
        ["--instances", "2", "--server-url", "http://127.0.0.1:1"],
        "Cannot combine --instances 2 with --server-url: the servers are its 1 URL(s), the lab starts no more",
      ],
    ];
    await Promise.all(
      cases.map(async ([args, message]) => {
        const proc = Bun.spawn(["bun", cli, "quickstart", ...args, "--dry-run"], { env, stderr: "pipe" });
        const stderr = await new Response(proc.stderr).text();
        expect({ args, code: await proc.exited }).toEqual({ args, code: 2 });
        expect({ args, first: stderr.split("\n")[0] }).toEqual({
          args,
          first: expect.stringContaining(message),
        });
        // One line and where the usage is: nothing to scroll the message away.
        expect({ args, stderr }).toEqual({
          args,
          stderr: `${stderr.split("\n")[0]}\nsee \`bun run experiment --help\`\n`,
        });
      }),
    );
  }, 60_000);

  test("a search's plan says its steps are chosen at run time and the most there can be", async () => {
    const out = tempCsv();
    const proc = Bun.spawn(["bun", cli, "capacity_check", "--dry-run", "--out", out], {
      env,
      stdout: "pipe",
    });
    const output = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(output).toContain("15 cells · 80 s of load · ETA ≈");
    expect(output).toContain(
      "then cells chosen at run time, one attack on a fresh server each: per regime (cpu, pool)",
    );
    expect(output).toMatch(
      /at most 24 a strategy, 120 in all \(720 s of load at most\): with them all, 135 cells, ETA ≤ \d+ min/,
    );
    expect(existsSync(out)).toBe(false);
    // Base twins mean nothing to steps chosen as it goes: each regime sets its own distances.
    for (const flag of ["--miss-cost-ms", "--redis-rtt-ms"]) {
      await expect(parseCommand(["capacity_check", flag, "5"])).rejects.toThrow(
        `Cannot use ${flag} here: the experiment chooses its steps at run time`,
      );
    }
  });

  test("--dry-run prints the deployment flags and each attack's base cells before it", async () => {
    const out = tempCsv();
    const args = ["network_rtt", "--dry-run", "--out", out, "--strategies", "none,redis", "--repeats", "1"];
    const flags = ["--miss-cost-ms", "5", "--redis-rtt-ms", "1", "--pool", "4", "--warmup-s", "1"];
    const proc = Bun.spawn(["bun", cli, ...args, ...flags, "--payload-bytes", "500"], {
      env,
      stdout: "pipe",
    });
    const output = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(output).toContain(
      "over the experiment file: --miss-cost-ms 5: Toxiproxy adds 5 ms − the lab's own miss cost (measured before the first cell) · --redis-rtt-ms 1: Toxiproxy adds 1 ms − the lab's own Redis round trip (measured before the first cell) · --payload-bytes 500 (every product body 500 B) · --warmup-s 1 · --pool 4",
    );
    expect(output).toContain('"pgPoolMax":4');
    expect(output).toContain("payload fixed 500");
    const attacks = [...output.matchAll(/^attack (\S+): .* · (\d+)s warm-up/gm)].map((m) => [m[1], m[2]]);
    const names = attacks.map(([name]) => name as string);
    // Every attack right after its base twin, every warm-up 1 s.
    expect(names.length).toBeGreaterThan(2);
    names.forEach((name, i) => {
      expect(name).toBe(
        i % 2 === 0 ? `${names[i + 1]}_base` : (names[i - 1] as string).replace(/_base$/, ""),
      );
    });
    expect(attacks.every(([, warmup]) => warmup === "1")).toBe(true);
    // network_rtt's own distance (+1 ms each way) stays; what a figure asked adds over it is known only once
    // the run has measured the lab's own, so the plan says how it is had, never a number; the twin keeps the
    // declared distance alone.
    const network = (name: string) =>
      new RegExp(`^attack ${name}: [^]*?^  network: (.*)$`, "m").exec(output)?.[1];
    expect(network("proxy_1ms_rate_1000_base")).toBe(
      "redis toxiproxy +1 ms each way · postgres toxiproxy +1 ms each way",
    );
    expect(network("proxy_1ms_rate_1000")).toBe(
      "redis toxiproxy +1 ms each way and half of (1 ms − the lab's own Redis round trip) each way · " +
        "postgres toxiproxy +1 ms each way and half of (5 ms − the lab's own miss cost) each way",
    );
    expect(network("direct_rate_1000_base")).toBe("redis toxiproxy · postgres toxiproxy");
    expect(network("direct_rate_1000")).toBe(
      "redis toxiproxy, half of (1 ms − the lab's own Redis round trip) each way · " +
        "postgres toxiproxy, half of (5 ms − the lab's own miss cost) each way",
    );
    expect(existsSync(out)).toBe(false);
  });

  test("a trace too short for the warm-up asked for is refused before anything starts", async () => {
    const proc = Bun.spawn(
      ["bun", cli, "your_workload", "--warmup-s", "60", "--dry-run", "--out", tempCsv()],
      { env, stderr: "pipe" },
    );
    const stderr = await new Response(proc.stderr).text();
    expect(await proc.exited).toBe(2);
    expect(stderr).toContain("holds 40000 requests; a 60 s warm-up and a 15 s run of replay need");
  });

  test("--payload-bytes wins over a trace's value sizes, and the run says so", async () => {
    const proc = Bun.spawn(
      ["bun", cli, "your_workload", "--payload-bytes", "2000", "--dry-run", "--out", tempCsv()],
      { env, stdout: "pipe" },
    );
    const output = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(output).toContain(
      "the trace's value sizes are set aside for replay: --payload-bytes 2000 sizes every body",
    );
    expect(output).toContain("seed: 100000 rows (seed 42), payload fixed 2000");
    expect(output).not.toContain("per-id");
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
        "--repeats",
        "1",
        "--out",
        out,
      ];
      const proc = Bun.spawn(["bun", cli, ...args, "--rate-rps", "200"], { env, stderr: "pipe" });
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
      await Bun.sleep(2_500); // into the second cell: its server is up and vegeta is attacking
      const tools = processesWorkingIn(rawRoot());
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
