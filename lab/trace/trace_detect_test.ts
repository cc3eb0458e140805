import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { contentExtension, detectFormat } from "./trace_detect.ts";

const testdata = join(import.meta.dir, "testdata");
const lines = (name: string) => readFileSync(join(testdata, name), "utf8").trimEnd().split("\n");
const twitter = lines("twitter-cluster026.head.txt");
const apache = lines("lehey-freebsd-apache.log");

test("the extension read through .gz/.zst; twitter's own names have none", () => {
  expect(contentExtension("a/t.csv.zst")).toBe(".csv");
  expect(contentExtension("T.LOG.GZ")).toBe(".log");
  expect(contentExtension("cluster026")).toBe("");
  expect(contentExtension("cluster52.0.zst")).toBe("");
  expect(contentExtension("keys.txt")).toBe(".txt");
});

test("the content decides where it is clear", () => {
  expect(detectFormat("trace.csv", ["ts_ms,key,op,size", "0,a,get,1"])).toBe("csv");
  expect(detectFormat("trace.txt.gz", ["\uFEFFkey,size", "a,1"])).toBe("csv");
  expect(detectFormat("cluster026", twitter)).toBe("twitter");
  expect(detectFormat("cluster52.0.zst", twitter)).toBe("twitter");
  expect(detectFormat("access.log", apache)).toBe("access-log");
  expect(detectFormat("access_log", apache)).toBe("access-log");
  expect(detectFormat("keys", ["42", "# a comment", "43"])).toBe("keys");
  expect(detectFormat("keys.txt", ["user:1", "", "user:2"])).toBe("keys");
});

test("the extension decides where the content does not", () => {
  expect(detectFormat("access.log", ["not a log line"])).toBe("access-log"); // its reader then names line 1
  expect(detectFormat("t.tsv", ["1\ta\t3"])).toBe("delimited");
  expect(detectFormat("empty.txt", [])).toBe("keys");
  // One malformed line among twitter's first is twitter's reader's to report; a few twitter-like lines among
  // keys do not make them twitter.
  expect(detectFormat("one-bad", [...twitter, "0,key,3,10,1,get"])).toBe("twitter");
  expect(detectFormat("keys", ["hello", ...twitter])).toBe("keys");
  expect(detectFormat("keys", [...twitter.slice(0, 2), "hello", "world"])).toBe("keys");
});

test("where two formats could apply the answer is ambiguous, never a guess", () => {
  // A headerless 7-column .csv: twitter, or a delimited trace that needs its column spec?
  expect(detectFormat("cluster026.csv", twitter)).toEqual({ ambiguous: ["twitter", "delimited"] });
  expect(detectFormat("cluster026.txt", twitter)).toEqual({ ambiguous: ["twitter", "keys"] });
  expect(detectFormat("access.txt", apache)).toEqual({ ambiguous: ["access-log", "keys"] });
  // A .csv without cachelab's header: cachelab csv with a header to fix, or delimited?
  expect(detectFormat("libcachesim.csv", lines("libcachesim-trace.head.csv"))).toEqual({
    ambiguous: ["csv", "delimited"],
  });
});
