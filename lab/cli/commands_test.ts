import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-commands-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** A trace with a write (docs/traces.md's csv format), and a CSV that is not a results CSV. */
const WRITES_TRACE = join(dir, "writes.csv");
writeFileSync(WRITES_TRACE, "key,op\n1,get\n2,get\n1,put\n3,get\n");
const NOT_RESULTS = join(dir, "other.csv");
writeFileSync(NOT_RESULTS, "a,b\n1,2\n");
const REFERENCE = join(REPO_ROOT, "docs", "results", "quickstart.csv");
const EMPTY = join(dir, "empty.csv");
writeFileSync(EMPTY, "");
const BINARY = join(dir, "binary.csv");
writeFileSync(BINARY, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3, 0, 0, 10]));
const FOLDER = join(REPO_ROOT, "docs", "results");

/** Every command package.json's "scripts" names, and the file it runs. */
const COMMANDS: [name: string, entry: string][] = [
  ["experiment", "lab/cli/experiment.ts"],
  ["attack", "lab/cli/attack.ts"],
  ["seed", "seed/seed.ts"],
  ["server", "lab/cli/server.ts"],
  ["report", "lab/cli/report.ts"],
  ["compare", "lab/cli/compare.ts"],
  ["trace", "lab/cli/trace_cli.ts"],
  ["services", "lab/cli/services.ts"],
  ["advise", "lab/cli/advise.ts"],
  ["tools", "lab/cli/tools.ts"],
];

/** Bad input each command must refuse with exit 2, before it starts or reads anything but its flags. */
const BAD_INPUT: [name: string, args: string[], message: string][] = [
  [
    "experiment",
    ["nope"],
    "Cannot run experiment nope: expected one of cache_toggle, capacity_check, clients,",
  ],
  ["experiment", ["quickstart", "--fast"], "Cannot use --fast: no such option"],
  [
    "experiment",
    ["read_heavy", "--trace", WRITES_TRACE, "--dry-run"],
    "it has writes or deletes and the attack zipf_reads has no PUT template with {id}",
  ],
  [
    "attack",
    ["--url", "http://127.0.0.1:1/products/{id}", "--tool", "ab"],
    "Cannot use --tool ab: expected one of oha, vegeta, k6, wrk, autocannon",
  ],
  [
    "attack",
    ["--url", "http://127.0.0.1:1/products/{id}", "--import", "k6-json", join(dir, "none.json")],
    `Cannot import: no such file: received ${join(dir, "none.json")}`,
  ],
  ["seed", ["--rows", "0"], "Cannot seed: rows must be an integer in 1..10000000: received 0"],
  ["server", ["--port", "3000"], "Cannot run bun run server: it takes no arguments"],
  ["report", ["--format", "pdf"], "Cannot use --format pdf: expected md or html"],
  ["report", [NOT_RESULTS], `Cannot read ${NOT_RESULTS}: its header is not a results CSV's`],
  [
    "report",
    [REFERENCE, "--baseline", "memcached"],
    "Cannot use --baseline memcached: expected a strategy the rows hold, one of none, local, redis, two_tier",
  ],
  [
    "report",
    [REFERENCE, "--format", "html", "--out", join(dir, "none", "r.html")],
    `Cannot use --out: the folder ${join(dir, "none")} does not exist`,
  ],
  ["compare", ["only.csv"], "Cannot compare: expected two CSVs, or one with --run-a and --run-b"],
  ["compare", [NOT_RESULTS, REFERENCE], `Cannot read ${NOT_RESULTS}: its header is not a results CSV's`],
  ["trace", ["bogus"], "Cannot run bun run trace: expected a subcommand, one of stats, mrc: received bogus"],
  ["services", ["bogus"], "Cannot run services: unknown command (valid: up, down, status): received bogus"],
  ["services", [], "Cannot run services: expected a command, one of up, down, status"],
  ["advise", ["--hit-ratio", "2"], "Cannot parse --hit-ratio: expected a ratio in 0..1: received 2"],
  ["advise", ["--from", `${REFERENCE}#nope`], `Cannot advise: no run nope in ${REFERENCE}: expected one of `],
  ["tools", ["--bogus"], "Cannot run bun run tools: it takes no arguments: received --bogus"],
  // A folder, an empty file, a binary: each named, in one line.
  ["report", [FOLDER], `Cannot read ${FOLDER}: it is a folder, not a file`],
  ["report", [EMPTY], `Cannot read ${EMPTY}: it is empty`],
  ["compare", [BINARY, REFERENCE], `Cannot read ${BINARY}: it is not text`],
  ["advise", ["--from", FOLDER], `Cannot read --from: it is a folder, not a file: received ${FOLDER}`],
  ["trace", ["stats", BINARY], `Cannot read trace ${BINARY}: it is not text`],
  ["trace", ["stats", FOLDER], `Cannot read trace ${FOLDER}: it is a folder, not a file`],
  // Negative, zero, huge and joined values say what is allowed.
  [
    "experiment",
    ["quickstart", "--repeats", "-1"],
    "Cannot parse --repeats: expected a positive integer up to 100",
  ],
  [
    "experiment",
    ["quickstart", "--rate-rps", "99999999999999999999"],
    "expected a positive integer up to 1000000",
  ],
  [
    "attack",
    ["--url", "http://127.0.0.1:1/p", "--rate", "-5"],
    "Cannot parse --rate: expected a positive integer",
  ],
  [
    "attack",
    ["--url", "http://127.0.0.1:1/p", "--connections=0"],
    "Cannot parse --connections: expected a positive integer",
  ],
  ["advise", ["--rate-rps", "-1"], "Cannot parse --rate-rps"],
  ["trace", ["stats", WRITES_TRACE, "--limit", "-3"], "Cannot parse --limit: expected a positive integer"],
];

const entryOf = (name: string) => COMMANDS.find(([command]) => command === name)?.[1] as string;

/** Runs a command as `bun run <name>` does; a command that starts something instead is killed at 20 s. */
async function run(entry: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(["bun", resolve(REPO_ROOT, entry), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 20_000,
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

describe("every command", () => {
  test("package.json runs exactly these commands", async () => {
    const { scripts } = (await Bun.file(join(REPO_ROOT, "package.json")).json()) as {
      scripts: Record<string, string>;
    };
    for (const [name, entry] of COMMANDS)
      expect({ name, script: scripts[name] }).toEqual({ name, script: `bun ${entry}` });
  });

  for (const [name, entry] of COMMANDS) {
    test(`${name} answers --help and -h with its usage on stdout, exit 0, starting nothing`, async () => {
      const [long, short] = await Promise.all([run(entry, ["--help"]), run(entry, ["-h"])]);
      for (const answer of [long, short]) {
        expect({ name, code: answer.code, stderr: answer.stderr }).toEqual({ name, code: 0, stderr: "" });
        expect(answer.stdout).toStartWith("usage: ");
        expect(answer.stdout.split("\n")[0]).toContain(`bun run ${name}`);
      }
      expect(short.stdout).toBe(long.stdout);
    });
  }

  test("a usage lists each flag once", async () => {
    for (const [name, entry] of COMMANDS) {
      const { stdout } = await run(entry, ["--help"]);
      const flags = [...stdout.matchAll(/^ {2}(?:-h, )?(--[a-z][a-z0-9-]*)/gm)].map((match) => match[1]);
      expect({ name, repeated: flags.filter((flag, i) => flags.indexOf(flag) !== i) }).toEqual({
        name,
        repeated: [],
      });
    }
  });

  test("bad input exits 2 with one message and no stack trace", async () => {
    for (const [name, args, message] of BAD_INPUT) {
      const { code, stderr } = await run(entryOf(name), args);
      expect({ name, args, code }).toEqual({ name, args, code: 2 });
      // The message, then where the usage is, nothing more; progress lines (a trace's description) may come
      // before it.
      const messages = stderr.split("\n").filter((line) => /^(Cannot|Unknown option|Option )/.test(line));
      expect({ name, args, messages }).toEqual({ name, args, messages: [expect.stringContaining(message)] });
      const tail = stderr.trimEnd().split("\n").slice(-2);
      expect({ name, args, tail }).toEqual({
        name,
        args,
        tail: [expect.stringContaining(message), `see \`bun run ${name} --help\``],
      });
      expect({ name, args, stack: stderr.match(/^ {4}at /m) }).toEqual({ name, args, stack: null });
    }
  }, 60_000);

  test("a failure of the lab exits 1 with its reason, the stack only with CACHELAB_DEBUG=1", async () => {
    const failing = join(dir, "failing.ts");
    writeFileSync(
      failing,
      `import { exitWith } from ${JSON.stringify(join(REPO_ROOT, "lab", "cli", "args.ts"))};
await exitWith(() => { throw new Error("Cannot start Postgres: initdb failed", { cause: new Error("disk full") }); });
`,
    );
    const plain = await run(failing, []);
    expect(plain).toEqual({
      code: 1,
      stdout: "",
      stderr: "Cannot start Postgres: initdb failed: caused by disk full\n",
    });
    const debug = await run(failing, [], { CACHELAB_DEBUG: "1" });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/^Error: Cannot start Postgres: initdb failed\n {4}at /);
  });
});

/** The words bash hands a program for `line`: `printf '%s\0'` put before them, the output split at NUL. */
async function wordsOf(line: string): Promise<string[]> {
  const proc = Bun.spawn(["bash", "-c", `printf '%s\\0' ${line}`], { stdout: "pipe" });
  const words = (await new Response(proc.stdout).text()).split("\0").slice(0, -1);
  expect(await proc.exited).toBe(0);
  return words;
}

/** Whether bash parses `text` as a whole command (a quote left open does not). */
async function parses(text: string): Promise<boolean> {
  return (await Bun.spawn(["bash", "-n", "-c", text], { stderr: "ignore" }).exited) === 0;
}

describe("experiment --dry-run's command lines", () => {
  test("without --commands-dir a dry run writes nothing, and says how to get the files", async () => {
    const tmp = mkdtempSync(join(dir, "tmp-"));
    const out = join(dir, "nothing.csv");
    const { code, stdout, stderr } = await run(
      "lab/cli/experiment.ts",
      ["quickstart", "--strategies", "none", "--repeats", "1", "--dry-run", "--out", out],
      { TMPDIR: tmp },
    );
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toContain(
      "its files (--commands-dir DIR writes them, into DIR/zipf_reads) hold its targets",
    );
    expect(readdirSync(tmp)).toEqual([]);
    expect(existsSync(out)).toBe(false);
  });

  // One per tool: its command names the input file, written beside it with the rest of its files.
  const CASES: [experiment: string, tool: string, input: string][] = [
    ["quickstart", "vegeta", "targets.jsonl"],
    ["quickstart", "k6", "script.js"],
    ["quickstart", "oha", "urls.txt"],
    ["cache_toggle", "wrk", "wrk.lua"],
    ["cache_toggle", "autocannon", "config.json"],
  ];

  for (const [experiment, tool, input] of CASES) {
    test(`${experiment} with ${tool}: the printed command pastes into bash as is, its files beside it`, async () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const commands = join(dir, `commands-${experiment}-${tool}`);
      const { code, stdout } = await run(
        "lab/cli/experiment.ts",
        [
          experiment,
          "--tool",
          tool,
          "--strategies",
          "none",
          "--repeats",
          "1",
          "--dry-run",
          "--commands-dir",
          commands,
          "--out",
          join(dir, "x.csv"),
        ],
        { TMPDIR: tmp },
      );
      expect(code).toBe(0);
      // The plan is the dry run's output (stdout), and it wrote only where --commands-dir said: no temp folder.
      const lines = stdout.split("\n");
      const header = lines.findIndex((line) =>
        line.startsWith("  command, to paste as is; its files are in "),
      );
      const folder = /its files are in (\S+), its targets a sample \(the stream's first (\d+)\)/.exec(
        lines[header] ?? "",
      );
      if (folder === null) throw new Error(`no command header in:\n${stdout}`);
      const [, commandDir = "", sample = ""] = folder;
      expect(readdirSync(tmp)).toEqual([]);
      expect(commandDir.startsWith(commands)).toBe(true);
      // The command: from the line after the header to where bash reads a whole command (a script's quotes close).
      let end = header + 2;
      while (!(await parses(lines.slice(header + 1, end).join("\n"))) && end < lines.length) end++;
      const command = lines
        .slice(header + 1, end)
        .join("\n")
        .trimStart();
      expect(await parses(command)).toBe(true);
      const prefix = `cd ${commandDir} && `;
      expect(command.startsWith(prefix)).toBe(true);
      const argv = JSON.parse(readFileSync(join(commandDir, "command.json"), "utf8")) as string[];
      expect(await wordsOf(command.slice(prefix.length))).toEqual(argv);
      // The input it names is there, holding the sample the header says.
      expect(argv.join(" ")).toContain(input);
      expect(existsSync(join(commandDir, input))).toBe(true);
      expect(Number(sample)).toBeGreaterThan(0);
      if (tool === "vegeta") {
        expect(readFileSync(join(commandDir, input), "utf8").trimEnd().split("\n")).toHaveLength(
          Number(sample),
        );
      }
    });
  }
});
