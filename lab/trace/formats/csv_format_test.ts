import { describe, expect, test } from "bun:test";
import type { LineResult } from "./_fields.ts";
import { csvParser, isCsvHeader } from "./csv_format.ts";

function parseAll(lines: string[]): LineResult[] {
  const parse = csvParser();
  return lines.map((line, i) => parse(line, i + 1));
}

describe("the csv reader", () => {
  test("reads cachelab's csv: ts_ms, key, op (words or HTTP methods), size; empty size is null", () => {
    // The sample of docs/traces.md, plus a quoted key holding a comma.
    const results = parseAll([
      "ts_ms,key,op,size",
      "0,product:1,get,512",
      "15,product:2,GET,",
      "31,product:1,PUT,530",
      '40,"product:3,v2",delete,',
    ]);
    expect(results).toEqual([
      { skip: "ignored", why: "header" },
      { key: "product:1", op: "read", sizeBytes: 512, tsMs: 0 },
      { key: "product:2", op: "read", sizeBytes: null, tsMs: 15 },
      { key: "product:1", op: "write", sizeBytes: 530, tsMs: 31 },
      { key: "product:3,v2", op: "delete", sizeBytes: null, tsMs: 40 },
    ]);
  });

  test("ts_s is seconds; columns in any order; only key is required; a BOM and spaces are no part of a name", () => {
    expect(parseAll(["\uFEFFsize, key ,ts_s", "10,a,1.5"])[1]).toEqual({
      key: "a",
      op: "read",
      sizeBytes: 10,
      tsMs: 1500,
    });
    expect(parseAll(["key", "a"])[1]).toEqual({ key: "a", op: "read", sizeBytes: null, tsMs: null });
  });

  test("a header it cannot use is fatal, naming the columns", () => {
    const why = (header: string) => (parseAll([header])[0] as { skip: string; why: string }).why;
    expect(parseAll(["ts_ms,id"])[0]).toMatchObject({ skip: "fatal" });
    expect(why("ts_ms,id")).toBe(
      'not a cachelab csv header: unknown column "id"; the columns are ts_ms, ts_s, key, op, size',
    );
    expect(why("ts_ms,op")).toBe(
      "not a cachelab csv header: the header names no key column; the columns are ts_ms, ts_s, key, op, size",
    );
    expect(why("ts_ms,ts_s,key")).toBe(
      "not a cachelab csv header: the header names both ts_ms and ts_s; name one",
    );
    expect(why("key,key")).toBe("not a cachelab csv header: column key is named twice");
    expect(why('key,"size')).toBe("not a cachelab csv header: the header's quoting is malformed");
  });

  test("bad rows say why: width, empty key, unknown op, a size or time that is not a number", () => {
    const whys = parseAll([
      "ts_ms,key,op,size",
      "1,a,get",
      "1,,get,3",
      "1,a,fetch,3",
      "1,a,get,-3",
      "soon,a,get,3",
      '1,"a,get,3',
    ]).map((result) => (result as { why: string }).why);
    expect(whys.slice(1)).toEqual([
      "3 fields where the header names 4",
      "empty key",
      expect.stringMatching(/^unknown op "fetch"; the ops are read\|get\|/),
      'size is not a whole number of bytes: "-3"',
      'time is not a non-negative number: "soon"',
      "unterminated quoted field from column 3",
    ]);
  });

  test("detection knows a cachelab header", () => {
    expect(isCsvHeader("ts_ms,key,op,size")).toBe(true);
    expect(isCsvHeader("key,op")).toBe(true);
    expect(isCsvHeader("ts_s,key,client")).toBe(true); // a time and a key: csv, whose reader then names "client"
    expect(isCsvHeader("version,time,op,size,lbn")).toBe(false);
    expect(isCsvHeader("0,key,3,10,1,get,0")).toBe(false);
  });
});
