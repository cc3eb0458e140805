import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { loadTrace, readTrace } from "./read.ts";
import { TRACE_OPS, type TraceRequest } from "./trace.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-read-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const testdata = join(import.meta.dir, "testdata");

function file(name: string, text: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("loadTrace", () => {
  test("twitter's cluster026 sample: format detected, keys interned, sizes and times kept, null as -1", async () => {
    const path = join(dir, "cluster026");
    copyFileSync(join(testdata, "twitter-cluster026.head.txt"), path);
    const trace = await loadTrace(path);
    expect(trace.source).toEqual({ path, format: "twitter" });
    expect(trace.keys).toHaveLength(5);
    expect([...trace.keyIndex]).toEqual([0, 1, 2, 3, 4]);
    expect([...trace.op].map((op) => TRACE_OPS[op])).toEqual(["read", "read", "write", "read", "read"]);
    expect([...(trace.sizeBytes ?? [])]).toEqual([2259, -1, 63, 76, 267]);
    expect([...(trace.tsMs ?? [])]).toEqual([0, 0, 1000, 1000, 2000]);
    expect(trace.skips).toEqual({ badLines: 0, unmatched: 0, ignored: 0, examples: [] });
  });

  test("gzip and zstd files load equal to the plain file", async () => {
    const text = Array.from({ length: 30_000 }, (_, i) => `${i},k${(i * 7) % 997},2,${i % 500},1,get,0`).join(
      "\n",
    );
    const plain = await loadTrace(file("t", text));
    const gz = await loadTrace(file("t.gz", gzipSync(text)));
    const zst = await loadTrace(file("t.zst", zstdCompressSync(text)));
    for (const compressed of [gz, zst]) {
      expect(compressed.source.format).toBe("twitter");
      expect(compressed.keys).toEqual(plain.keys);
      expect(compressed.keyIndex).toEqual(plain.keyIndex);
      expect(compressed.op).toEqual(plain.op);
      expect(compressed.sizeBytes).toEqual(plain.sizeBytes);
      expect(compressed.tsMs).toEqual(plain.tsMs);
    }
    expect(plain.keys).toHaveLength(997);
  });

  test("a malformed line is an error naming the file and the line", async () => {
    const path = file(
      "bad-twitter",
      "0,a,1,10,1,get,0\n1,b,1,10,1,get,0\n2,c,1,10,1,get\n3,d,1,10,1,get,0\n",
    );
    expect(loadTrace(path)).rejects.toThrow(
      `Cannot read trace ${path}: line 3: 6 fields where a twitter line has 7: received "2,c,1,10,1,get"`,
    );
    const csv = file("bad.csv", "ts_ms,key,op\n0,a,get\n\n5,b,fetch\n");
    expect(loadTrace(csv)).rejects.toThrow(`Cannot read trace ${csv}: line 4: unknown op "fetch"`);
  });

  test("the received text is cut to 200 characters", async () => {
    const path = file("long.csv", `key,size\n${"k".repeat(300)},big\n`);
    const error = await loadTrace(path).catch((caught: Error) => caught.message);
    expect(error).toEndWith(`: received "${"k".repeat(200)}…"`);
  });

  test("skipBadLines counts bad lines, keeps five examples and every good request", async () => {
    const lines = ["ts_s,key,size"];
    for (let i = 0; i < 20; i++)
      lines.push(i % 3 === 0 ? `${i},k${i},` : `${i},k${i},${i % 2 === 0 ? "x" : i}`);
    const trace = await loadTrace(file("some-bad.csv", lines.join("\n")), { skipBadLines: true });
    const good = Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 3 === 0 || i % 2 === 1);
    expect(trace.keys).toEqual(good.map((i) => `k${i}`));
    expect(trace.skips.badLines).toBe(20 - good.length);
    expect(trace.skips.ignored).toBe(1);
    expect(trace.skips.examples).toHaveLength(5);
    expect(trace.skips.examples[0]).toEqual({
      line: 4,
      why: 'size is not a whole number of bytes: "x"',
      text: "2,k2,x",
    });
    expect([...(trace.tsMs ?? [])].slice(0, 2)).toEqual([0, 1000]);
    expect([...(trace.sizeBytes ?? [])].slice(0, 2)).toEqual([-1, 1]);
  });

  test("access-log lines the route does not select are counted as unmatched, with examples", async () => {
    const path = join(dir, "access.log");
    copyFileSync(join(testdata, "lehey-freebsd-apache.log"), path);
    const trace = await loadTrace(path, { route: String.raw`^/Images/([^/]+)\.jpeg$` });
    expect(trace.source.format).toBe("access-log");
    expect(trace.keys).toEqual(["yaoipower", "randomgal.big"]);
    expect(trace.skips.unmatched).toBe(2);
    expect(trace.skips.badLines).toBe(0);
    expect(trace.skips.examples.map((example) => [example.line, example.why])).toEqual([
      [3, "the route does not match the path"],
      [4, "the route does not match the path"],
    ]);
    // A route that selects nothing: no requests, never an empty trace.
    expect(loadTrace(path, { route: "^/api/products/(\\d+)" })).rejects.toThrow(
      `Cannot read trace ${path}: no requests (0 ignored, 4 unmatched by the route, 0 bad; first: line 1: the route does not match the path)`,
    );
  });

  test("five examples are kept of each kind, so unmatched lines do not hide the bad ones", async () => {
    const log = (path: string) => `10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET ${path} HTTP/1.1" 200 10`;
    const lines = Array.from({ length: 8 }, (_, i) => log(`/static/${i}.css`));
    lines.push("garbage", log("/api/products/7"), "more garbage");
    const trace = await loadTrace(file("mixed.log", lines.join("\n")), {
      route: "^/api/products/(\\d+)",
      skipBadLines: true,
    });
    expect(trace.keys).toEqual(["7"]);
    expect([trace.skips.unmatched, trace.skips.badLines]).toEqual([8, 2]);
    expect(trace.skips.examples.map((example) => example.line)).toEqual([1, 2, 3, 4, 5, 9, 11]);
  });

  test("a trace with no request is an error, whatever it skipped", async () => {
    const empty = file("empty.txt", "");
    expect(loadTrace(empty)).rejects.toThrow(
      `Cannot read trace ${empty}: no requests (0 ignored, 0 unmatched by the route, 0 bad): received ""`,
    );
    const comments = file("comments.txt", "# only\n\n# comments\n");
    expect(loadTrace(comments)).rejects.toThrow("no requests (3 ignored, 0 unmatched by the route, 0 bad)");
    const allBad = file("all-bad.csv", "key,size\na,x\n");
    expect(loadTrace(allBad, { skipBadLines: true })).rejects.toThrow(
      'no requests (1 ignored, 0 unmatched by the route, 1 bad; first: line 2: size is not a whole number of bytes: "x"): received "a,x"',
    );
  });

  test("limit reads at most that many requests", async () => {
    const path = file("many.txt", Array.from({ length: 50_000 }, (_, i) => `k${i}`).join("\n"));
    const trace = await loadTrace(path, { limit: 3 });
    expect(trace.keys).toEqual(["k0", "k1", "k2"]);
  });

  test("a generated 200 000-line csv loads with the right counts", async () => {
    const lines = ["ts_ms,key,op,size"];
    const ops = ["get", "GET", "set", "PUT", "delete"];
    for (let i = 0; i < 200_000; i++) {
      if (i % 10_000 === 0) lines.push("");
      lines.push(
        `${i * 2},"product:${(i * 31) % 50_000}",${ops[i % 5]},${i % 7 === 0 ? "" : 100 + (i % 900)}`,
      );
    }
    const trace = await loadTrace(file("big.csv", lines.join("\r\n")));
    expect(trace.keyIndex.length).toBe(200_000);
    expect(trace.keys.length).toBe(50_000);
    expect(trace.keys[1]).toBe("product:31");
    expect(trace.skips.ignored).toBe(1 + 20);
    const counts = [0, 0, 0];
    for (const op of trace.op) counts[op] = (counts[op] as number) + 1;
    expect(counts).toEqual([80_000, 80_000, 40_000]);
    expect(trace.sizeBytes?.filter((size) => size === -1).length).toBe(Math.ceil(200_000 / 7));
    expect(trace.tsMs?.[199_999]).toBe(399_998);
  });
});

describe("readTrace", () => {
  test("streams requests and reports the format before the first", async () => {
    const reader = await readTrace(file("stream.txt", "a\n# note\nb\na\n"));
    expect(reader.format).toBe("keys");
    const requests: TraceRequest[] = [];
    for await (const request of reader.requests) requests.push(request);
    expect(requests.map((request) => request.key)).toEqual(["a", "b", "a"]);
    expect(reader.skips.ignored).toBe(1);
    const again = async () => {
      for await (const _ of reader.requests) break;
    };
    expect(again()).rejects.toThrow("its requests are read once");
  });

  test("stopping early is allowed (the file is closed), and a bad line is thrown where it is met", async () => {
    const reader = await readTrace(file("early.txt", "a\nb\nc\n"));
    for await (const request of reader.requests) {
      expect(request.key).toBe("a");
      break;
    }
    const bad = await readTrace(file("late-bad", "0,a,1,1,1,get,0\nnot twitter\n"), { format: "twitter" });
    const keys: string[] = [];
    const error = await (async () => {
      for await (const request of bad.requests) keys.push(request.key);
    })().catch((caught: Error) => caught.message);
    expect(keys).toEqual(["a"]);
    expect(error).toContain("line 2: 1 field where a twitter line has 7");
  });
});
