import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { loadTrace, type TraceReadOptions } from "./read.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-read-errors-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const testdata = join(import.meta.dir, "testdata");

function file(name: string, text: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function message(path: string, options: TraceReadOptions = {}): Promise<string> {
  return loadTrace(path, options).then(
    () => "loaded",
    (error: Error) => `${error.name}: ${error.message}`,
  );
}

const keys = file("keys.txt", "a\nb\n");

test("an ambiguous trace names the formats it could be and --trace-format", async () => {
  const path = join(dir, "cluster026.csv");
  copyFileSync(join(testdata, "twitter-cluster026.head.txt"), path);
  expect(await message(path)).toStartWith(
    `TraceError: Cannot read trace ${path}: its format is ambiguous: it reads as twitter or delimited; ` +
      'pass --trace-format twitter|delimited: received "0,y:46:7d:CXm4:',
  );
  expect((await loadTrace(path, { format: "twitter" })).keys).toHaveLength(5);
});

test("options that do not fit are refused before any line is read", async () => {
  const cases: [TraceReadOptions, string][] = [
    [
      { format: "json" as never },
      "unknown format; the formats are keys, csv, twitter, delimited, access-log: received json",
    ],
    [{ limit: 0 }, "the limit must be a positive whole number of requests: received 0"],
    [{ limit: 1.5 }, "the limit must be a positive whole number of requests: received 1.5"],
    [
      { format: "csv", columns: "key-col=1" },
      "--columns applies to the delimited format only: received format csv",
    ],
    [
      { format: "keys", route: "^/(.*)" },
      "--route applies to the access-log format only: received format keys",
    ],
    [
      { columns: "key-col=1", route: "^/(.*)" },
      "--columns is for delimited traces and --route for access logs; give one",
    ],
  ];
  for (const [options, why] of cases)
    expect(await message(keys, options)).toStartWith(`TraceError: Cannot read trace ${keys}: ${why}`);
});

test("a format that needs a spec or a route says so, and a bad one is named", async () => {
  expect(await message(keys, { format: "delimited" })).toStartWith(
    `TraceError: Cannot read trace ${keys} as delimited: it needs --columns, e.g. "time-col=1,key-col=2,has-header=true,delimiter=,": received none`,
  );
  expect(await message(keys, { format: "access-log" })).toStartWith(
    `TraceError: Cannot read trace ${keys} as access-log: it needs --route, a regex whose first capture group is the key, e.g. '^/api/products/(\\d+)': received none`,
  );
  expect(await message(keys, { columns: "key=1" })).toStartWith(
    `TraceError: Cannot read trace ${keys} as delimited: the column spec: unknown field "key"; the fields are key-col,`,
  );
  expect(await message(keys, { route: "^/api/products/\\d+" })).toBe(
    `TraceError: Cannot read trace ${keys} as access-log: the route: it has no capture group for the key, ` +
      `e.g. '^/api/products/(\\d+)': received "^/api/products/\\\\d+"`,
  );
  // columns and route imply their formats.
  expect((await loadTrace(keys, { columns: "key-col=1" })).source.format).toBe("delimited");
});

test("a missing file, or a directory, is named", async () => {
  const missing = join(dir, "nope.txt");
  expect(await message(missing)).toBe(
    `TraceError: Cannot read trace ${missing}: no such file: received ${missing}`,
  );
  expect(await message(dir)).toBe(
    `TraceError: Cannot read trace ${dir}: it is a folder, not a file: received ${dir}`,
  );
});

test("a file that cannot be read from the start is named, with why", async () => {
  // /proc/self/mem is a regular file whose offset 0 is unmapped: reading it fails, even as root.
  expect(await message("/proc/self/mem")).toStartWith(
    "TraceError: Cannot read trace /proc/self/mem: after line 0: opening failed: EIO",
  );
});

test("a csv header without a key is fatal even under skipBadLines", async () => {
  const path = file("no-key.csv", "ts_ms,id\n0,a\n");
  expect(await message(path, { format: "csv", skipBadLines: true })).toBe(
    `TraceError: Cannot read trace ${path}: line 1: not a cachelab csv header: unknown column "id"; ` +
      'the columns are ts_ms, ts_s, key, op, size: received "ts_ms,id"',
  );
});

test("a line that is not UTF-8 is a bad line, never a key with a replacement character", async () => {
  const path = file(
    "latin1.txt",
    Buffer.concat([Buffer.from("caf"), Buffer.from([0xe9]), Buffer.from("\nok\n")]),
  );
  expect(await message(path)).toBe(
    `TraceError: Cannot read trace ${path}: line 1: not valid UTF-8 text: received "caf\uFFFD"`,
  );
  const trace = await loadTrace(path, { skipBadLines: true });
  expect(trace.keys).toEqual(["ok"]);
  expect(trace.skips.badLines).toBe(1);
});

test("a corrupt compressed file is an error after the last line read, not a short trace", async () => {
  const whole = gzipSync(Array.from({ length: 100_000 }, (_, i) => `key-${i}`).join("\n"));
  const path = file("cut.txt.gz", whole.subarray(0, whole.length - 100));
  expect(await message(path)).toMatch(
    new RegExp(
      `^TraceError: Cannot read trace ${path}: after line \\d+: gzip decompression failed: .*: received the file's bytes$`,
    ),
  );
});
