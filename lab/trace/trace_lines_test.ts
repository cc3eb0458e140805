import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { compressionOf, MAX_LINE_BYTES, TraceStreamError, traceLineBatches } from "./trace_lines.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-trace-lines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function readLines(path: string): Promise<{ lines: string[]; invalid: number[] }> {
  const lines: string[] = [];
  const invalid: number[] = [];
  for await (const batch of traceLineBatches(path)) {
    expect(batch.firstLine).toBe(lines.length + 1);
    lines.push(...batch.lines);
    invalid.push(...(batch.invalidUtf8 ?? []));
  }
  return { lines, invalid };
}

/** Compresses with the real CLI where it is installed (as a user's file would be), else with node:zlib. */
function compress(path: string, tool: "gzip" | "zstd"): string {
  const out = `${path}.${tool === "gzip" ? "gz" : "zst"}`;
  if (Bun.which(tool) !== null) {
    const run = Bun.spawnSync([tool, "-q", "-k", "-f", path]);
    expect(run.exitCode).toBe(0);
  } else writeFileSync(out, (tool === "gzip" ? gzipSync : zstdCompressSync)(readFileSync(path)));
  return out;
}

// More than two 1 MiB chunks, with multi-byte characters that chunk edges cut, CRLF ends and no final newline.
const text = Array.from({ length: 120_000 }, (_, i) => (i % 3 === 0 ? `ключ-${i}\r` : `k€y-${i}`)).join("\n");
const plain = join(dir, "keys.txt");
writeFileSync(plain, text);
const expected = text.split("\n").map((line) => line.replace(/\r$/, ""));

describe("traceLineBatches", () => {
  test("a plain file: every line, in order, without \\r, the last one without a newline", async () => {
    const { lines, invalid } = await readLines(plain);
    expect(lines.length).toBe(120_000);
    expect(lines).toEqual(expected);
    expect(invalid).toEqual([]);
  });

  test("gzip and zstd round trips equal the plain file", async () => {
    for (const tool of ["gzip", "zstd"] as const) {
      const path = compress(plain, tool);
      expect(compressionOf(path)).toBe(tool);
      expect((await readLines(path)).lines).toEqual(expected);
    }
  });

  test("a compressed file without its extension is found by its magic bytes", async () => {
    const gz = join(dir, "renamed-gz");
    writeFileSync(gz, gzipSync("a\nb\n"));
    const zst = join(dir, "renamed-zst");
    writeFileSync(zst, zstdCompressSync("c\nd\n"));
    expect([compressionOf(gz), compressionOf(zst), compressionOf(plain)]).toEqual(["gzip", "zstd", null]);
    expect((await readLines(gz)).lines).toEqual(["a", "b"]);
    expect((await readLines(zst)).lines).toEqual(["c", "d"]);
  });

  test("a BOM is dropped; a line that is not UTF-8 is flagged, a real U+FFFD is not", async () => {
    const path = join(dir, "mixed.txt");
    writeFileSync(
      path,
      Buffer.concat([
        Buffer.from("\uFEFFfirst\nok \uFFFD\n"),
        Buffer.from([0x63, 0xff, 0x0a]),
        Buffer.from("end\n"),
      ]),
    );
    expect(await readLines(path)).toEqual({ lines: ["first", "ok \uFFFD", "c\uFFFD", "end"], invalid: [3] });
  });

  test("a line longer than the bound is refused rather than held", async () => {
    const path = join(dir, "long.txt");
    writeFileSync(path, `short\n${"x".repeat(MAX_LINE_BYTES + 10)}\n`);
    const error = await readLines(path).then(
      () => "read",
      (caught: TraceStreamError) => `${caught.name}: ${caught.message} (after line ${caught.afterLine})`,
    );
    expect(error).toBe(`TraceStreamError: line 2 is longer than ${MAX_LINE_BYTES} bytes (after line 1)`);
    // A line with no end is refused once it outgrows the bound, before the file ends.
    writeFileSync(path, "x".repeat(3 * MAX_LINE_BYTES));
    expect(
      await readLines(path).then(
        () => "read",
        (caught: Error) => caught.message,
      ),
    ).toBe(`line 1 is longer than ${MAX_LINE_BYTES} bytes`);
  });

  test("a corrupt gzip file fails as such, not as an empty trace", async () => {
    const path = join(dir, "corrupt.txt.gz");
    const whole = gzipSync(text);
    writeFileSync(path, whole.subarray(0, whole.length >> 1));
    const error = await readLines(path).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TraceStreamError);
    expect((error as Error).message).toStartWith("gzip decompression failed: ");
  });
});
