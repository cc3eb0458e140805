/**
 * The admin guard over real server processes: each rule of server/admin_auth.ts refusing (or letting
 * through) a real HTTP request, as a browser page, a DNS-rebinding page, the network or the lab sends it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { testDatabaseUrl, testServices } from "../lab/shared/testing.ts";
import { ADMIN_TOKEN_HEADER } from "../server_config.ts";
import { isLoopbackHost } from "./admin_auth.ts";

let databaseUrl: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  await testServices();
  databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

async function server(env: Record<string, string> = {}, hostname?: string): Promise<ServerProcess> {
  const started = await startServer({
    env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl, ...env },
    ...(hostname ? { hostname } : {}),
  });
  servers.push(started);
  return started;
}

async function post(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; error: string; headers: Headers }> {
  const response = await fetch(url, { method: "POST", headers });
  const text = await response.text();
  const error = response.ok ? "" : ((JSON.parse(text) as { error: string }).error ?? "");
  return { status: response.status, error, headers: response.headers };
}

const ADMIN_PATHS = ["/admin/reset", "/stats/window"];

test("isLoopbackHost takes 127.x, localhost and ::1 and nothing else", () => {
  for (const host of ["127.0.0.1", "127.3.2.1", "localhost", "LOCALHOST", "a.localhost", "::1", "[::1]"]) {
    expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: true });
  }
  for (const host of ["0.0.0.0", "10.0.0.5", "127.0.0.1.evil.example", "evil.example", "::", "128.0.0.1"]) {
    expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: false });
  }
});

describe("with CACHELAB_ADMIN_TOKEN (every server the lab starts)", () => {
  let withToken: ServerProcess;
  beforeAll(async () => {
    withToken = await server();
  });

  test("no header or a wrong token is 401 on /admin/reset and /stats/window; the token is 200", async () => {
    expect(withToken.adminToken).toBeString();
    for (const path of ADMIN_PATHS) {
      const missing = await post(`${withToken.url}${path}`);
      expect({ path, status: missing.status }).toEqual({ path, status: 401 });
      expect(missing.error).toBe(
        `Cannot authorize ${path}: header ${ADMIN_TOKEN_HEADER} must equal the server's CACHELAB_ADMIN_TOKEN: received no header`,
      );
      const wrong = await post(`${withToken.url}${path}`, {
        [ADMIN_TOKEN_HEADER]: `${withToken.adminToken}x`,
      });
      expect({ path, status: wrong.status, error: wrong.error }).toEqual({
        path,
        status: 401,
        error: expect.stringContaining("received another value"),
      });
      const right = await post(`${withToken.url}${path}`, {
        [ADMIN_TOKEN_HEADER]: withToken.adminToken as string,
      });
      expect({ path, status: right.status }).toEqual({ path, status: 200 });
    }
    const stats = (await (await fetch(`${withToken.url}/stats`)).json()) as { resets: number };
    expect(stats.resets).toBe(1);
  });

  test("a page's POST (Origin elsewhere, no custom header) is refused, and its preflight gets no Access-Control-Allow-*", async () => {
    const before = ((await (await fetch(`${withToken.url}/stats`)).json()) as { resets: number }).resets;
    // What a form or fetch(…, { mode: "no-cors" }) on http://example.com sends: a CORS simple request.
    const simple = await post(`${withToken.url}/admin/reset`, {
      origin: "http://example.com",
      "content-type": "text/plain",
    });
    expect(simple.status).toBe(401);
    expect([...simple.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
    // Sending the header from a page needs this preflight first; nothing approves it.
    for (const path of ADMIN_PATHS) {
      const preflight = await fetch(`${withToken.url}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: "http://example.com",
          "access-control-request-method": "POST",
          "access-control-request-headers": ADMIN_TOKEN_HEADER,
        },
      });
      await preflight.body?.cancel();
      expect({ path, ok: preflight.ok }).toEqual({ path, ok: false });
      expect([...preflight.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
    }
    const after = ((await (await fetch(`${withToken.url}/stats`)).json()) as { resets: number }).resets;
    expect(after).toBe(before);
  });
});

describe("without a token", () => {
  test("on a loopback bind: the header is required (any value), and a Host that is not loopback is 403", async () => {
    const loopback = await server({ CACHELAB_ADMIN_TOKEN: "" });
    expect(loopback.adminToken).toBeNull();
    for (const path of ADMIN_PATHS) {
      const missing = await post(`${loopback.url}${path}`);
      expect({ path, status: missing.status, error: missing.error }).toEqual({
        path,
        status: 401,
        error: expect.stringContaining(`header ${ADMIN_TOKEN_HEADER} is required`),
      });
      // A DNS-rebinding page: its own host name resolved to 127.0.0.1, so the Host header is its name.
      const rebound = await post(`${loopback.url}${path}`, {
        [ADMIN_TOKEN_HEADER]: "anything",
        host: `rebind.example:${loopback.port}`,
      });
      expect({ path, status: rebound.status, error: rebound.error }).toEqual({
        path,
        status: 403,
        error: expect.stringContaining(
          "the Host header must name a loopback address (127.x, localhost, [::1]): received rebind.example",
        ),
      });
      for (const host of [`127.0.0.1:${loopback.port}`, `localhost:${loopback.port}`]) {
        const ok = await post(`${loopback.url}${path}`, { [ADMIN_TOKEN_HEADER]: "anything", host });
        expect({ path, host, status: ok.status }).toEqual({ path, host, status: 200 });
      }
    }
  });

  test("on 0.0.0.0: admin calls are 403 even over loopback with the header, and the startup line names 0.0.0.0", async () => {
    const open = await server({ CACHELAB_ADMIN_TOKEN: "" }, "0.0.0.0");
    const url = `http://127.0.0.1:${open.port}`;
    for (const path of ADMIN_PATHS) {
      const refused = await post(`${url}${path}`, { [ADMIN_TOKEN_HEADER]: "anything" });
      expect({ path, status: refused.status, error: refused.error }).toEqual({
        path,
        status: 403,
        error: expect.stringContaining(
          "the server listens on 0.0.0.0, not a loopback address, without CACHELAB_ADMIN_TOKEN",
        ),
      });
    }
    // The product routes still answer.
    expect((await fetch(`${url}/products/1`)).status).toBe(200);
    expect(open.output()).toContain(`http://0.0.0.0:${open.port} `);
  });
});
