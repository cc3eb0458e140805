import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isTwitterLine, parseTwitterLine } from "./twitter_format.ts";

// Real lines of the Twitter production cache traces (github.com/twitter/cache-trace, CC-BY 4.0); see testdata/README.md.
const testdata = join(import.meta.dir, "..", "testdata");
const cluster026 = readFileSync(join(testdata, "twitter-cluster026.head.txt"), "utf8").trimEnd().split("\n");
const cluster001 = readFileSync(join(testdata, "twitter-cluster001.line1.txt"), "utf8").trimEnd();

describe("the twitter reader", () => {
  test("reads cluster026's first lines: key, op, value size, time in ms", () => {
    const requests = cluster026.map((line) => parseTwitterLine(line));
    expect(requests.map((r) => ("key" in r ? [r.op, r.sizeBytes, r.tsMs] : r))).toEqual([
      ["read", 2259, 0],
      ["read", null, 0], // a get with value size 0: no value was there to measure
      ["write", 63, 1000],
      ["read", 76, 1000],
      ["read", 267, 2000],
    ]);
    expect(requests[2]).toMatchObject({ key: "CXmJ.(XkBRYR5kp.ekvW.vYBt.eWtvxJB)-XkBRYR5kp.RpXkpxykeWY" });
    // The key-size field is the anonymized key's length in every sample line: the key was cut whole.
    for (const [i, line] of cluster026.entries()) {
      const keySize = Number(line.split(",").at(-5));
      expect((requests[i] as { key: string }).key.length).toBe(keySize);
    }
  });

  test("reads cluster001's first line", () => {
    expect(parseTwitterLine(cluster001)).toEqual({
      key: "z44uy84y444444zkuMdF44i444444svfX484u84444CF44Cgv_-CyLli48d4y84444wIVo44",
      op: "read",
      sizeBytes: 455,
      tsMs: 0,
    });
  });

  test("a key holding commas is everything between the first field and the last five", () => {
    expect(parseTwitterLine("7,ns:a,b,,c,9,120,3,set,600")).toEqual({
      key: "ns:a,b,,c",
      op: "write",
      sizeBytes: 120,
      tsMs: 7000,
    });
  });

  test("maps every twitter operation; a write of 0 bytes keeps 0, a delete has no size", () => {
    const op = (name: string, valueSize = 10) => parseTwitterLine(`1,k,1,${valueSize},1,${name},0`);
    for (const name of ["get", "gets"]) expect(op(name)).toMatchObject({ op: "read", sizeBytes: 10 });
    for (const name of ["set", "add", "replace", "cas", "append", "prepend", "incr", "decr"])
      expect(op(name, 0)).toMatchObject({ op: "write", sizeBytes: 0 });
    expect(op("delete")).toMatchObject({ op: "delete", sizeBytes: null });
  });

  test("names what is wrong with a malformed line", () => {
    const why = (line: string) => (parseTwitterLine(line) as { why: string }).why;
    expect(why("0,key,3,10,1,get")).toBe("6 fields where a twitter line has 7");
    expect(why("x,key,3,10,1,get,0")).toStartWith("timestamp: time is not a non-negative number");
    expect(why("0,key,3,ten,1,get,0")).toStartWith("value size is not a whole number");
    expect(why("0,key,-3,10,1,get,0")).toBe("key size is not a whole number");
    expect(why("0,key,3,10,1,GET,0")).toStartWith('unknown operation "GET"');
    expect(why("0,key,3,10,1,get,")).toBe("TTL is not a whole number of seconds");
    expect(why("0,,3,10,1,get,0")).toBe("empty key");
    expect(why("0,key,3,3000000000,1,set,0")).toBe("value size 3000000000 is over 2147483647 bytes");
  });

  test("a twitter-shaped line is one the reader reads", () => {
    expect(cluster026.every(isTwitterLine)).toBe(true);
    expect(isTwitterLine("time,key,key_size,value_size,client,op,ttl")).toBe(false);
  });
});
