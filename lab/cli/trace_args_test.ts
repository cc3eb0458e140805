import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { UsageError } from "./args.ts";
import { traceKeysFrom } from "./trace_args.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-trace-args-"));
const file = join(dir, "t.keys");
writeFileSync(file, "a\nb\n");

describe("traceKeysFrom", () => {
  test("a trace with its flags, the path made absolute", () => {
    expect(traceKeysFrom({})).toBeUndefined();
    expect(
      traceKeysFrom({ trace: file, "trace-format": "keys", "trace-pace": "recorded", speed: "2" }),
    ).toEqual({ kind: "trace", file, format: "keys", pace: "recorded", speed: 2 });
    expect(traceKeysFrom({ trace: file, "skip-bad-lines": true, route: "^/p/(\\d+)" })).toEqual({
      kind: "trace",
      file,
      route: "^/p/(\\d+)",
      skipBadLines: true,
    });
  });

  test("bad flags are usage errors naming what is valid", () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ trace: join(dir, "missing.keys") }, /no such file/],
      [{ trace: dir }, /no such file/],
      [
        { trace: file, "trace-format": "parquet" },
        /expected one of keys, csv, twitter, delimited, access-log/,
      ],
      [{ "trace-format": "keys" }, /--trace-format without --trace FILE/],
      [{ trace: file, "trace-pace": "fast" }, /expected fixed or recorded/],
      [{ trace: file, speed: "2" }, /--speed: expected a number > 0 with --trace-pace recorded/],
      [{ trace: file, "trace-pace": "recorded", speed: "0" }, /--speed/],
    ];
    for (const [values, message] of bad) {
      expect(() => traceKeysFrom(values)).toThrow(UsageError);
      expect(() => traceKeysFrom(values)).toThrow(message);
    }
  });
});
