import { expect, test } from "bun:test";
import { keysParser } from "./keys_format.ts";

test("keys: each line is a key read; blank lines and # comments are ignored, not keys", () => {
  // The shape of libCacheSim's txt traces (data/trace.txt: one object id a line) and of keys a user pastes.
  const parse = keysParser();
  const lines = ["# products seen on Monday", "42", "", "   ", "user:7 profile", "42", "ünïcode/ключ"];
  expect(lines.map((line, i) => parse(line, i + 1))).toEqual([
    { skip: "ignored", why: "comment" },
    { key: "42", op: "read", sizeBytes: null, tsMs: null },
    { skip: "ignored", why: "blank line" },
    { skip: "ignored", why: "blank line" },
    { key: "user:7 profile", op: "read", sizeBytes: null, tsMs: null },
    { key: "42", op: "read", sizeBytes: null, tsMs: null },
    { key: "ünïcode/ключ", op: "read", sizeBytes: null, tsMs: null },
  ]);
});
