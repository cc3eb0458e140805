import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { loadTrace, type TraceReadOptions } from "./read.ts";
import { TRACE_FORMATS } from "./trace.ts";

// docs/traces.md shows a sample of each format; each must read as that format, detected from its name and
// lines (or implied by its options), with no bad line, so the page cannot drift from the readers.
const page = readFileSync(join(import.meta.dir, "..", "..", "docs", "traces.md"), "utf8");
const SAMPLE = /<!-- sample: (\S+) (\S+)(?: (\{.*\}))? -->\n\n```text\n([\s\S]*?)```/g;
const samples = [...page.matchAll(SAMPLE)].map(([, name, format, options, text]) => ({
  name: name as string,
  format: format as string,
  options: (options === undefined ? {} : JSON.parse(options)) as TraceReadOptions,
  text: text as string,
}));
const dir = mkdtempSync(join(testTmpdir(), "cachelab-docs-samples-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("docs/traces.md has a sample of every format", () => {
  expect(samples.map((sample) => sample.format).sort()).toEqual([...TRACE_FORMATS].sort());
});

test("each sample in docs/traces.md reads as its format", async () => {
  for (const sample of samples) {
    const path = join(dir, sample.name);
    writeFileSync(path, sample.text);
    const trace = await loadTrace(path, sample.options);
    expect({ name: sample.name, format: trace.source.format }).toEqual({
      name: sample.name,
      format: sample.format as never,
    });
    expect(trace.keyIndex.length).toBeGreaterThan(0);
    expect(trace.skips.badLines).toBe(0);
  }
});
