import { describe, expect, test } from "bun:test";
import { readCsv } from "./csv_read.ts";

const fields = (text: string) => readCsv(text).records.map((record) => [record.line, ...record.fields]);

describe("readCsv", () => {
  test("reads a well-formed file whole, quoted newlines included, each record with the line it starts on", () => {
    expect(fields('a,b,c\n1,"x\ny",3\n\n6,7,8\n')).toEqual([
      [2, "1", "x\ny", "3"],
      [5, "6", "7", "8"],
    ]);
    expect(readCsv("")).toEqual({ header: null, records: [], skipped: [] });
    expect(readCsv("a,b,c").header).toEqual(["a", "b", "c"]); // a header alone needs no newline
  });

  test("skips a short row and keeps the rows around it", () => {
    const content = readCsv("a,b,c\n1,2,3\n4,5\n6,7,8\n");
    expect(content.records.map((record) => record.line)).toEqual([2, 4]);
    expect(content.skipped).toEqual([{ line: 3, reason: "2 fields where the header has 3" }]);
  });

  test("a cut line's open quote does not swallow the rows after it", () => {
    const content = readCsv('a,b,c\n1,2,3\n4,"5 x\n6,7,8\n9,"q",10\n');
    expect(content.records.map((record) => record.fields)).toEqual([
      ["1", "2", "3"],
      ["6", "7", "8"],
      ["9", "q", "10"],
    ]);
    expect(content.skipped).toEqual([{ line: 3, reason: "a quoted field is never closed" }]);
  });

  test("an unterminated last record is a write cut short, even when its width is right", () => {
    expect(readCsv("a,b,c\n1,2,3\n4,5,6").skipped).toEqual([
      { line: 3, reason: "the last line has no newline: a write cut short" },
    ]);
  });
});
