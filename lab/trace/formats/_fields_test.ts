import { describe, expect, test } from "bun:test";
import { opFromWord, parseSizeBytes, parseTimeMs, splitFields } from "./_fields.ts";

describe("splitFields", () => {
  test("splits RFC 4180 fields: quotes around delimiters, doubled quotes, empty fields", () => {
    // RFC 4180 §2's examples: "aaa","b""bb","ccc" and fields holding the delimiter.
    expect(splitFields('"aaa","b""bb","ccc"', ",")).toEqual(["aaa", 'b"bb', "ccc"]);
    expect(splitFields('1,"a,b",,"",x', ",")).toEqual(["1", "a,b", "", "", "x"]);
    expect(splitFields("a\tb\t\tc", "\t")).toEqual(["a", "b", "", "c"]);
  });

  test("names malformed quoting", () => {
    expect(splitFields('1,"open', ",")).toBe("unterminated quoted field from column 3");
    expect(splitFields('1,"a"b,2', ",")).toBe("text after a closing quote at column 6");
    expect(splitFields('1,a"b,2', ",")).toBe("a quote inside an unquoted field at column 3");
  });
});

test("op words: cachelab's, memcached's and HTTP methods, any case", () => {
  expect(["get", "GET", "head", "read", "gets"].map(opFromWord)).toEqual([
    "read",
    "read",
    "read",
    "read",
    "read",
  ]);
  expect(["set", "PUT", "post", "PATCH", "write", "cas"].map(opFromWord)).toEqual(Array(6).fill("write"));
  expect(["delete", "DELETE"].map(opFromWord)).toEqual(["delete", "delete"]);
  expect(opFromWord("OPTIONS")).toBeNull();
});

test("sizes and times refuse what is not a number, never reading it as 0", () => {
  expect(parseSizeBytes("0")).toBe(0);
  expect(parseSizeBytes("2147483647")).toBe(2147483647);
  expect(parseSizeBytes("2147483648")).toBe("size 2147483648 is over 2147483647 bytes");
  expect(parseSizeBytes("-1")).toBe('size is not a whole number of bytes: "-1"');
  expect(parseSizeBytes("1.5")).toBe('size is not a whole number of bytes: "1.5"');
  expect(parseTimeMs("1.25", 1000)).toBe(1250);
  expect(parseTimeMs("", 1)).toBe('time is not a non-negative number: ""');
  expect(parseTimeMs("1e3", 1)).toBe('time is not a non-negative number: "1e3"');
});
