/**
 * Who may call the lab's admin and measurement routes (/admin/*, /stats/window): they reset caches and
 * counters, so a web page the user happens to open must not reach them. Every rule leans on one fact: a
 * custom header is not CORS-safelisted, so a browser sends it only after a preflight, which this server
 * never approves (no route answers OPTIONS with Access-Control-Allow-*).
 *
 * - With CACHELAB_ADMIN_TOKEN: the `x-cachelab-admin-token` header must equal it (compared in constant
 *   time), else 401.
 * - Without one, on a non-loopback bind: 403; anyone on the network could call them.
 * - Without one, on a loopback bind: the header must be there (any value), else 401, and the Host header must
 *   name a loopback address, else 403: a DNS-rebinding page reaches 127.0.0.1 under its own host name.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ADMIN_TOKEN_HEADER } from "../server_config.ts";

/** Whether `host` (an address or name, IPv6 with or without brackets) is this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const name = bare.toLowerCase();
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) ||
    /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function refusal(status: 401 | 403, error: string): Response {
  return new Response(JSON.stringify({ error }), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/**
 * A check for one admin request: null lets it through, else the 401/403 to answer. `bindHost` is the
 * address the server listens on (HOST).
 */
export function createAdminGuard(options: {
  token: string | null;
  bindHost: string;
}): (request: Request) => Response | null {
  const { token, bindHost } = options;
  if (token !== null) {
    // Digests have one length, so timingSafeEqual compares without leaking the token's length either.
    const expected = digest(token);
    return (request) => {
      const sent = request.headers.get(ADMIN_TOKEN_HEADER);
      if (sent !== null && timingSafeEqual(digest(sent), expected)) return null;
      return refusal(
        401,
        `Cannot authorize ${new URL(request.url).pathname}: header ${ADMIN_TOKEN_HEADER} must equal the server's CACHELAB_ADMIN_TOKEN: received ${sent === null ? "no header" : "another value"}`,
      );
    };
  }
  if (!isLoopbackHost(bindHost)) {
    return (request) =>
      refusal(
        403,
        `Cannot authorize ${new URL(request.url).pathname}: the server listens on ${bindHost}, not a loopback address, without CACHELAB_ADMIN_TOKEN; restart it with one: received a request from the network`,
      );
  }
  return (request) => {
    // Bun builds request.url from the Host header, so its hostname is the name the client asked for.
    const url = new URL(request.url);
    const path = url.pathname;
    if (request.headers.get(ADMIN_TOKEN_HEADER) === null) {
      return refusal(
        401,
        `Cannot authorize ${path}: header ${ADMIN_TOKEN_HEADER} is required (any value while the server has no CACHELAB_ADMIN_TOKEN): received no header`,
      );
    }
    if (!isLoopbackHost(url.hostname)) {
      return refusal(
        403,
        `Cannot authorize ${path}: without CACHELAB_ADMIN_TOKEN the Host header must name a loopback address (127.x, localhost, [::1]): received ${url.hostname}`,
      );
    }
    return null;
  };
}
