import { describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { TraceError, type TraceReadOptions } from "../trace/read.ts";
import { type CompactTrace, compactTrace, type TraceRequest } from "../trace/trace.ts";
import { type LoadTrace, main } from "./trace_cli.ts";

const CLI = join(import.meta.dir, "trace_cli.ts");
const TESTDATA = join(import.meta.dir, "..", "trace", "testdata");

/** `bun run trace …` as a process. */
function command(...args: string[]) {
  const child = Bun.spawnSync(["bun", CLI, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: child.exitCode, stdout: child.stdout.toString(), stderr: child.stderr.toString() };
}

/** a b a c a, the last two with sizes and times. */
const TRACE = compactTrace(
  (["a", "b", "a", "c", "a"] as const).map(
    (key, i): TraceRequest => ({
      key,
      op: "read",
      sizeBytes: i < 3 ? null : 100 * i,
      tsMs: i < 3 ? null : 1_000 * i,
    }),
  ),
  { path: "memory.csv", format: "csv" },
);

/** Runs `main` over a loader that hands out `trace`, capturing what it prints and what it was asked. */
async function run(args: string[], load: LoadTrace = async () => TRACE) {
  const out = spyOn(console, "log").mockImplementation(() => {});
  const err = spyOn(console, "error").mockImplementation(() => {});
  const asked: { path: string; options: TraceReadOptions }[] = [];
  try {
    const code = await main(args, async (path, options) => {
      asked.push({ path, options });
      return load(path, options);
    });
    const text = (spy: typeof out) => spy.mock.calls.map((call) => String(call[0])).join("\n");
    return { code, stdout: text(out), stderr: text(err), asked };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe("bun run trace stats", () => {
  test("prints each statistic, unknown where the trace does not say, and the skipped lines", async () => {
    const { code, stdout } = await run(["stats", "t.csv"]);
    expect(code).toBe(0);
    expect(stdout).toContain("trace memory.csv (csv); skipped lines: 0 bad");
    expect(stdout).toMatch(/requests\s+5\n/);
    expect(stdout).toMatch(/one-hit-wonder ratio \(whole trace\)\s+0\.667/);
    expect(stdout).toMatch(/Zipf alpha\s+unknown \(.*: 1 ranks\)/);
    expect(stdout).toMatch(/duration\s+1 s/);
  });

  test("--json prints the statistics as one object, nulls kept", async () => {
    const { code, stdout } = await run(["stats", "t.csv", "--json"]);
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as { stats: Record<string, unknown> };
    expect(parsed.stats.requests).toBe(5);
    expect(parsed.stats.zipfAlpha).toBeNull();
  });

  test("hands the reading flags to the reader", async () => {
    const args = [
      "stats",
      "access.log",
      "--trace-format",
      "access-log",
      "--route",
      "^/p/(\\d+)",
      "--skip-bad-lines",
      "--limit",
      "1000",
    ];
    const { code, asked } = await run(args);
    expect(code).toBe(0);
    expect(asked).toEqual([
      {
        path: "access.log",
        options: { format: "access-log", route: "^/p/(\\d+)", skipBadLines: true, limit: 1_000 },
      },
    ]);
  });

  test("a reader's TraceError exits 2 with its message", async () => {
    const failing: LoadTrace = async () => {
      throw new TraceError("Cannot read t.csv: line 3: expected 2 fields: received 1");
    };
    const { code, stderr } = await run(["stats", "t.csv"], failing);
    expect(code).toBe(2);
    expect(stderr).toContain("Cannot read t.csv: line 3: expected 2 fields: received 1");
  });
});

describe("bun run trace mrc", () => {
  test("prints every curve at each size, hit ratios then byte hit ratios, the configured capacity marked", async () => {
    const { code, stdout } = await run(["mrc", "t.csv", "--sizes", "1,100%", "--capacity", "2"]);
    expect(code).toBe(0);
    expect(stdout).toContain("5 reads of 3 keys, 2 with a size");
    const [hit, bytes] = stdout.split("byte hit ratio\n") as [string, string];
    expect(hit).toMatch(
      /hit ratio\nsize\s+entries\s+lru\s+local\s+belady\s+sieve\s+s3fifo\s+wtinylfu\s+arc\n/,
    );
    expect(hit).toMatch(/\n1\s+1(\s+0\.000){7}\n/);
    // From 2 entries the two re-reads of a hit, except in S3-FIFO: a, read twice in a 1-entry small queue
    // (frequency 1, under the threshold of 2), goes to the ghost when c arrives, and its return is a miss.
    expect(hit).toMatch(/\n2\s+2(\s+0\.400){4}\s+0\.200\s+0\.400\s+0\.400\s+◀ --capacity\n/);
    expect(hit).toMatch(/\n100%\s+3(\s+0\.400){7}\n/);
    // Of the sized reads (c 300 B, a 400 B) a's 400 B hit.
    expect(bytes).toMatch(/\n2\s+2(\s+0\.571){4}\s+0\.000\s+0\.571\s+0\.571\s+◀ --capacity\n/);
  });

  test("--json carries the curves, the op semantics and the configured capacity", async () => {
    const { code, stdout } = await run(["mrc", "t.csv", "--json", "--capacity", "3"]);
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as { configuredCapacity: number; opSemantics: string; curves: object };
    expect(parsed.configuredCapacity).toBe(3);
    expect(parsed.opSemantics).toContain("a write or delete invalidates");
    expect(Object.keys(parsed.curves)).toEqual([
      "lru",
      "local",
      "belady",
      "sieve",
      "s3fifo",
      "wtinylfu",
      "arc",
    ]);
  });
});

describe("bun run trace usage errors", () => {
  const cases: [string, string[], string][] = [
    ["no subcommand", [], "expected a subcommand, one of stats, mrc: received nothing"],
    ["an unknown subcommand", ["curves", "t.csv"], "one of stats, mrc: received curves"],
    ["an unknown flag", ["stats", "t.csv", "--sizes", "1%"], "Cannot use --sizes: no such option"],
    ["no file", ["mrc"], "expected one trace FILE: received 0"],
    [
      "a bad format",
      ["stats", "t", "--trace-format", "tsv"],
      "expected one of keys, csv, twitter, delimited",
    ],
    [
      "a bad capacity",
      ["mrc", "t", "--capacity", "0"],
      "Cannot parse --capacity: expected a positive integer",
    ],
    ["a bad limit", ["stats", "t", "--limit", "1e3"], "Cannot parse --limit: expected a positive integer"],
    ["a bad size list", ["mrc", "t", "--sizes", "1%,big"], "or entry counts (100,1000,…): received 1%,big"],
  ];
  for (const [name, args, message] of cases) {
    test(`${name} exits 2 with the usage`, async () => {
      const { code, stderr, asked } = await run(args);
      expect(code).toBe(2);
      expect(stderr).toContain(message);
      expect(stderr).toContain("see `bun run trace --help`");
      expect(asked).toEqual([]);
    });
  }

  test("a trace without reads exits 2 from mrc", async () => {
    const writes: CompactTrace = compactTrace([{ key: "a", op: "write", sizeBytes: null, tsMs: null }]);
    const { code, stderr } = await run(["mrc", "t"], async () => writes);
    expect(code).toBe(2);
    expect(stderr).toContain("the trace has no reads");
  });

  test("the command itself exits 2 on a bad --sizes, before reading the file", () => {
    const child = Bun.spawnSync(["bun", CLI, "mrc", "/nonexistent/trace.csv", "--sizes", "5%,0%"], {
      stderr: "pipe",
    });
    expect(child.exitCode).toBe(2);
    expect(child.stderr.toString()).toContain("Cannot parse --sizes: a percentage must be in (0, 100]: 0%");
  });
});

describe("bun run trace on real trace files (lab/trace/testdata, sources in its README)", () => {
  test("stats of Twitter's cluster026 head: 5 requests, 4 gets and a set, 2 s", () => {
    const { code, stdout } = command(
      "stats",
      join(TESTDATA, "twitter-cluster026.head.txt"),
      "--trace-format",
      "twitter",
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/requests\s+5\n/);
    expect(stdout).toMatch(/read \/ write \/ delete share\s+0\.800 \/ 0\.200 \/ 0\.000/);
    expect(stdout).toMatch(/duration\s+2 s/);
  });

  test("mrc --json of libCacheSim's csv sample, read through its column spec", () => {
    const columns = "time-col=2,obj-id-col=5,obj-size-col=4,has-header=true,delimiter=,";
    const { code, stdout } = command(
      "mrc",
      join(TESTDATA, "libcachesim-trace.head.csv"),
      "--trace-columns",
      columns,
      "--json",
    );
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as {
      reads: number;
      skips: { ignored: number };
      curves: { lru: unknown[] };
    };
    expect(parsed.reads).toBe(11);
    expect(parsed.skips.ignored).toBe(1); // the header
    expect(parsed.curves.lru).toHaveLength(7);
  });

  test("a malformed line exits 2 naming the file and the line; an ambiguous format exits 2 asking for it", () => {
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-trace-cli-"));
    const file = join(dir, "bad.twr");
    writeFileSync(file, "0,a,10,100,1,get,0\n1,a,10,100,1,get\n");
    const bad = command("stats", file, "--trace-format", "twitter");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`Cannot read trace ${file}: line 2:`);
    const ambiguous = command("stats", join(TESTDATA, "twitter-cluster026.head.txt"));
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain("pass --trace-format twitter|keys");
  });
});

test("docs/trace_statistics.md shows what the commands print on the sample trace", () => {
  const root = join(import.meta.dir, "..", "..");
  const page = readFileSync(join(root, "docs", "trace_statistics.md"), "utf8");
  const blocks = [...page.matchAll(/<!-- output: (.+) -->\n\n```text\n([\s\S]*?)```/g)];
  expect(blocks.map(([, args]) => args?.split(" ")[0])).toEqual(["stats", "mrc"]);
  for (const [, args, text] of blocks) {
    const child = Bun.spawnSync(["bun", CLI, ...(args as string).split(" ")], { cwd: root, stdout: "pipe" });
    expect({ args, text: child.stdout.toString() }).toEqual({ args, text: text as string });
  }
});
