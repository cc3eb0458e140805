import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { LineResult } from "./_fields.ts";
import { delimitedParser, parseColumnSpec } from "./delimited_format.ts";

function parseAll(spec: string, lines: string[]): LineResult[] {
  const parse = delimitedParser(parseColumnSpec(spec));
  return lines.map((line, i) => parse(line, i + 1));
}

// libCacheSim's csv example (data/trace.csv) with the column spec its docs give it; see testdata/README.md.
const libCacheSim = readFileSync(
  join(import.meta.dir, "..", "testdata", "libcachesim-trace.head.csv"),
  "utf8",
)
  .trimEnd()
  .split("\n");

describe("parseColumnSpec", () => {
  test("reads libCacheSim's spec, its names and ours, and delimiter=, at the end or in the middle", () => {
    const libCacheSimSpec = parseColumnSpec(
      "time-col=2,obj-id-col=5,obj-size-col=4,has-header=true,delimiter=,",
    );
    expect(libCacheSimSpec).toEqual({
      key: 4,
      time: 1,
      size: 3,
      op: null,
      hasHeader: true,
      delimiter: ",",
      timeUnitMs: 1000,
    });
    expect(parseColumnSpec("delimiter=,,key-col=2, time-col=1, ts-unit=ms")).toMatchObject({
      key: 1,
      time: 0,
      delimiter: ",",
      timeUnitMs: 1,
    });
    expect(parseColumnSpec("key-col=1,delimiter=\\t").delimiter).toBe("\t");
    expect(parseColumnSpec("key-col=1,delimiter=tab").delimiter).toBe("\t");
    expect(parseColumnSpec("key-col=1,delimiter=space").delimiter).toBe(" ");
    expect(parseColumnSpec("key-col=1,delimiter=;").delimiter).toBe(";");
  });

  test("a bad spec throws naming the valid fields", () => {
    const fields =
      "the fields are key-col, obj-id-col, time-col, size-col, obj-size-col, op-col, has-header, delimiter, ts-unit";
    const cases: [string, string][] = [
      ["time-col=1", "key-col is required"],
      ["key-col=2,colour=blue", 'unknown field "colour"'],
      ["key-col=0", "key-col must be a column number from 1"],
      ["key-col=two", "key-col must be a column number from 1"],
      ["key-col=1,obj-id-col=2", "obj-id-col is given twice"],
      ["key-col=1,has-header=yes", "has-header must be true or false"],
      ["key-col=1,delimiter=;;", "delimiter must be one character (not a quote), \\t, tab or space"],
      ['key-col=1,delimiter="', "delimiter must be one character (not a quote), \\t, tab or space"],
      ["key-col=1,ts-unit=us", "ts-unit must be s or ms"],
      ["key-col", '"key-col" is not name=value'],
    ];
    for (const [spec, why] of cases) {
      expect(() => parseColumnSpec(spec)).toThrow(`Cannot read the column spec: ${why}; ${fields}`);
      expect(() => parseColumnSpec(spec)).toThrow(`received ${JSON.stringify(spec)}`);
    }
  });
});

describe("the delimited reader", () => {
  test("reads libCacheSim's data/trace.csv: header skipped, lbn as key, size, time in s", () => {
    const results = parseAll(
      "time-col=2,obj-id-col=5,obj-size-col=4,has-header=true,delimiter=,",
      libCacheSim,
    );
    expect(results[0]).toEqual({ skip: "ignored", why: "header" });
    expect(results.slice(1, 5)).toEqual([
      { key: "42932745", op: "read", sizeBytes: 512, tsMs: 33_898_000 },
      { key: "42932746", op: "read", sizeBytes: 512, tsMs: 33_898_000 },
      { key: "42932747", op: "read", sizeBytes: 512, tsMs: 33_898_000 },
      { key: "40409911", op: "read", sizeBytes: 6656, tsMs: 33_898_000 },
    ]);
    expect(results).toHaveLength(12);
  });

  test("an op column uses the op words; a tab-separated trace with ms times", () => {
    const results = parseAll("time-col=1,key-col=2,op-col=3,delimiter=\\t,ts-unit=ms", [
      "5\tu:1\tset",
      "6\tu:1\tGET",
    ]);
    expect(results).toEqual([
      { key: "u:1", op: "write", sizeBytes: null, tsMs: 5 },
      { key: "u:1", op: "read", sizeBytes: null, tsMs: 6 },
    ]);
  });

  test("bad rows say why", () => {
    // libCacheSim's op column holds "2a" (a SCSI opcode): read as an op it is unknown, not a read.
    const whys = parseAll("time-col=2,key-col=5,size-col=4,op-col=3,has-header=true", [
      libCacheSim[0] as string,
      libCacheSim[1] as string,
      "1,33898,get,512",
      "1,33898,get,big,7",
      "1,33898,get,512,",
    ]).map((result) => (result as { why: string }).why);
    expect(whys.slice(1)).toEqual([
      expect.stringMatching(/^unknown op "2a"/),
      "4 fields where the column spec reads column 5",
      'size is not a whole number of bytes: "big"',
      "empty key",
    ]);
  });
});
