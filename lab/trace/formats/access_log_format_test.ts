import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { accessLogParser, compileRoute, isAccessLogLine } from "./access_log_format.ts";

// Real log lines: Apache's docs, Lehey's "The Complete FreeBSD", the nginx Docker image; see testdata/README.md.
const testdata = join(import.meta.dir, "..", "testdata");
const lines = (name: string) => readFileSync(join(testdata, name), "utf8").trimEnd().split("\n");
const apache = lines("apache-docs.log");
const lehey = lines("lehey-freebsd-apache.log");
const nginx = lines("nginx-docker-main.log");

describe("the access-log reader", () => {
  test("reads Apache's common and combined examples: key from the route, time with its zone, body size", () => {
    const parse = accessLogParser(compileRoute(String.raw`^/(\w+)\.gif$`));
    const expected = {
      key: "apache_pb",
      op: "read" as const,
      sizeBytes: 2326,
      tsMs: Date.parse("2000-10-10T20:55:36Z"),
    };
    expect(parse(apache[0] as string, 1)).toEqual(expected);
    expect(parse(apache[1] as string, 2)).toEqual(expected);
  });

  test("a 304 or 404 is a read with no size; other paths are unmatched, with why", () => {
    const parse = accessLogParser(compileRoute(String.raw`^/Images/([^/]+)\.jpeg$`));
    expect(lehey.map((line, i) => parse(line, i + 1))).toEqual([
      { key: "yaoipower", op: "read", sizeBytes: 19365, tsMs: Date.parse("2002-10-31T20:36:12Z") },
      { key: "randomgal.big", op: "read", sizeBytes: null, tsMs: Date.parse("2002-10-31T21:05:34Z") },
      { skip: "unmatched", why: "the route does not match the path" },
      { skip: "unmatched", why: "the route does not match the path" },
    ]);
    // The query string is part of what the route sees.
    const scripts = accessLogParser(compileRoute(String.raw`^/\w+/root\.exe\?(.+)$`));
    expect(scripts(lehey[2] as string, 3)).toMatchObject({ key: "/c+dir", op: "read", sizeBytes: null });
  });

  test("reads nginx's combined with a field appended (the Docker image's main format), and a unix-socket client", () => {
    const parse = accessLogParser(compileRoute("^(/)$"));
    expect(nginx.map((line, i) => parse(line, i + 1))).toEqual([
      { key: "/", op: "read", sizeBytes: 612, tsMs: Date.parse("2018-03-10T18:14:15Z") },
      { key: "/", op: "read", sizeBytes: 612, tsMs: Date.parse("2018-03-10T18:14:17Z") },
      { key: "/", op: "read", sizeBytes: 612, tsMs: Date.parse("2021-04-30T23:13:37Z") },
    ]);
  });

  test("the method gives the op; HEAD and writes carry no value size; other methods are unmatched", () => {
    const parse = accessLogParser(compileRoute(String.raw`^/api/products/(\d+)`));
    const at = (method: string, status = "200") =>
      parse(
        `10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "${method} /api/products/42?v=1 HTTP/1.1" ${status} 350`,
        1,
      );
    expect(at("GET")).toMatchObject({ key: "42", op: "read", sizeBytes: 350 });
    expect(at("HEAD")).toMatchObject({ op: "read", sizeBytes: null });
    for (const method of ["PUT", "POST", "PATCH"])
      expect(at(method)).toMatchObject({ op: "write", sizeBytes: null });
    expect(at("DELETE", "204")).toMatchObject({ op: "delete", sizeBytes: null });
    expect(at("OPTIONS")).toEqual({ skip: "unmatched", why: "method OPTIONS is not a cache operation" });
    expect(
      parse('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /api/products/1 HTTP/1.1" 200 3000000000', 1),
    ).toEqual({
      skip: "bad",
      why: "response size 3000000000 is over 2147483647 bytes",
    });
  });

  test("a log line with no request line is unmatched; a line that is not a log line is bad", () => {
    const parse = accessLogParser(compileRoute("^/(.*)"));
    // nginx logs "-" for a connection that sent no request, and the bytes of a TLS hello sent to a plain port.
    expect(parse('10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "-" 400 0 "-" "-"', 1)).toEqual({
      skip: "unmatched",
      why: 'no HTTP request line in "-"',
    });
    expect(
      parse(
        String.raw`10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "\x16\x03\x01\x00\xF4\x01" 400 157 "-" "-"`,
        1,
      ),
    ).toMatchObject({ skip: "unmatched" });
    expect(parse("GET /x HTTP/1.1 200", 1)).toEqual({
      skip: "bad",
      why: "not a common or combined log line",
    });
    expect(parse('10.0.0.1 - - [10/Foo/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1', 1)).toEqual({
      skip: "bad",
      why: 'unknown month "Foo"',
    });
    expect(parse('10.0.0.1 - - [32/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1', 1)).toMatchObject({
      skip: "bad",
      why: "no such time 32/Oct/2000:13:55:36",
    });
  });

  test("a route must compile and capture", () => {
    expect(() => compileRoute("^/api/(")).toThrow(/^Cannot read the route: .*: received "\^\/api\/\("$/);
    expect(() => compileRoute("^/api/products/\\d+")).toThrow("it has no capture group for the key");
    expect(compileRoute("^/(?:a|b)/(\\d+)").exec("/a/7")?.[1]).toBe("7");
    const optional = accessLogParser(compileRoute("^/p(?:/(\\d+))?$"));
    expect(optional('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /p HTTP/1.1" 200 5', 1)).toEqual({
      skip: "unmatched",
      why: "the route matched without capturing a key",
    });
    const empty = accessLogParser(compileRoute("^/p/(\\d*)$"));
    expect(empty('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /p/ HTTP/1.1" 200 5', 1)).toEqual({
      skip: "unmatched",
      why: "the route matched without capturing a key",
    });
  });

  test("detection knows a log line", () => {
    expect([...apache, ...lehey, ...nginx].every(isAccessLogLine)).toBe(true);
    expect(isAccessLogLine("0,key,3,10,1,get,0")).toBe(false);
  });
});
