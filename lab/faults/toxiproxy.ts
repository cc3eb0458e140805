/**
 * Toxiproxy (Shopify, pinned v2.12.0): the lab's fault and distance engine. The lab runs its own build,
 * tools/toxiproxy (v2.12.0's server plus a `latency_us` toxic, since the stock `latency` takes whole
 * milliseconds), installed as `toxiproxy-server` by scripts/install-deps.sh. `startToxiproxy` runs a server
 * of its own (its own process group, a free port below the ephemeral range, readiness polled); `Toxiproxy`
 * drives its HTTP API with plain fetch, about six JSON calls (FACTS §6: the npm client pulls in axios for
 * nothing more).
 *
 * Semantics to keep in mind (FACTS §6): `upstream` is client → server, `downstream` server → client; a
 * latency toxic is one-way, so a round trip needs it on both streams; toxicity is drawn once per connection,
 * not per request; `enabled: false` refuses new connections and closes every open one; removing a `timeout`
 * toxic closes the connections it held.
 */
import { closeSync } from "node:fs";
import type { Subprocess } from "bun";
import { findServiceUser, type UnprivilegedSpawn, unprivilegedSpawn } from "../services/run_as.ts";
import { commandOutput, findBinary, goBinary, goBinDirs } from "../shared/binaries.ts";
import { portAnswers } from "../shared/ports.ts";
import { stopGroup } from "../shared/process.ts";

export const TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2";
/** The main module of the lab's build (tools/toxiproxy/go.mod); a stock build's is TOXIPROXY_MODULE. */
export const TOXIPROXY_BUILD = "cachelab/toxiproxy";
export const TOXIPROXY_INSTALL =
  'bash scripts/install-deps.sh, or: go -C tools/toxiproxy build -trimpath -o "$(go env GOPATH)/bin/toxiproxy-server" .';
/** Below the ephemeral range (32768–61000), so a proxy's port is never taken by an outgoing connection. */
const FIRST_PORT = 18_474;

export type ToxicType =
  | "latency"
  /** The lab's build only: `latency` and `jitter` in µs (tools/toxiproxy/latency_us.go). */
  | "latency_us"
  | "bandwidth"
  | "slow_close"
  | "timeout"
  | "reset_peer"
  | "slicer"
  | "limit_data";

export interface Toxic {
  name: string;
  type: ToxicType;
  stream: "upstream" | "downstream";
  /** The share of connections the toxic applies to, drawn once per connection. */
  toxicity: number;
  attributes: Record<string, number>;
}

export interface Proxy {
  name: string;
  /** host:port the proxy listens on. */
  listen: string;
  /** host:port it forwards to. */
  upstream: string;
  enabled: boolean;
  toxics: Toxic[];
}

/**
 * The installed lab build of the server and the Toxiproxy version it is built on (the dependency, e.g.
 * "2.12.0"), or why there is none. A stock build counts as missing: network paths need `latency_us`.
 */
export function detectToxiproxy(): { path: string; version: string } | { missing: string } {
  const go = goBinary();
  const path = findBinary("toxiproxy-server", goBinDirs(go));
  if (path === null) return { missing: `toxiproxy-server is not installed: ${TOXIPROXY_INSTALL}` };
  const buildInfo = go === null ? null : commandOutput([go, "version", "-m", path]);
  if (buildInfo === null) return { missing: `Cannot read the build info of ${path} (go version -m)` };
  return toxiproxyBuild(path, buildInfo);
}

/** detectToxiproxy's reading of `go version -m`: the lab's build (main module), its Toxiproxy dep. */
export function toxiproxyBuild(
  path: string,
  buildInfo: string,
): { path: string; version: string } | { missing: string } {
  const main = /^\s*mod\s+(\S+)/m.exec(buildInfo)?.[1];
  if (main !== TOXIPROXY_BUILD) {
    const what =
      main === TOXIPROXY_MODULE
        ? "a stock Toxiproxy build"
        : `not the lab's build (${main ?? "no main module"})`;
    return {
      missing: `${path} is ${what}, without the latency_us toxic network paths need: ${TOXIPROXY_INSTALL}`,
    };
  }
  // The lab's build lists Toxiproxy as a dependency (`dep`), not as its main module (`mod`).
  const dep = new RegExp(
    `^\\s*dep\\s+${TOXIPROXY_MODULE.replaceAll(".", "\\.")}\\s+v(\\d+\\.\\d+\\.\\d+\\S*)`,
    "m",
  );
  const version = dep.exec(buildInfo)?.[1];
  if (version === undefined)
    return { missing: `Cannot read the Toxiproxy version of ${path} (go version -m)` };
  return { path, version };
}

/** A free loopback port at or above `from`, below the ephemeral range. */
export async function freeLowPort(from = FIRST_PORT): Promise<number> {
  for (let port = from; port < 32_768; port++) if (!(await portAnswers(port))) return port;
  throw new RangeError(`Cannot find a free port between ${from} and 32767`);
}

/**
 * How to run the server with its API on 127.0.0.1:`port` only and, when the lab is root, as `nobody`: the API
 * has no authentication, so whoever reaches it may open proxies, but not with root's powers.
 */
export function toxiproxySpawn(path: string, port: number): UnprivilegedSpawn {
  return unprivilegedSpawn(findServiceUser(["nobody"]), path, ["-host", "127.0.0.1", "-port", String(port)]);
}

export interface ToxiproxyServer {
  client: Toxiproxy;
  apiUrl: string;
  version: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts a Toxiproxy server of the lab's own; throws, naming the install command, when it is missing. */
export async function startToxiproxy(options: { readyTimeoutMs?: number } = {}): Promise<ToxiproxyServer> {
  const found = detectToxiproxy();
  if ("missing" in found) throw new Error(`Cannot start Toxiproxy: ${found.missing}`);
  const port = await freeLowPort();
  const spawn = toxiproxySpawn(found.path, port);
  let proc: Subprocess;
  try {
    proc = Bun.spawn(spawn.argv, {
      env: { LOG_LEVEL: "warn" },
      stdio: ["ignore", "ignore", "pipe", ...(spawn.binaryFd === null ? [] : [spawn.binaryFd])],
      cwd: "/",
      detached: true,
    });
  } finally {
    if (spawn.binaryFd !== null) closeSync(spawn.binaryFd);
  }
  const apiUrl = `http://127.0.0.1:${port}`;
  const client = new Toxiproxy(apiUrl);
  const server: ToxiproxyServer = {
    client,
    apiUrl,
    version: found.version,
    pid: proc.pid,
    stop: async () => {
      await stopGroup(proc, 2_000);
    },
  };
  const deadline = performance.now() + (options.readyTimeoutMs ?? 5_000);
  while (performance.now() < deadline) {
    if (proc.exitCode !== null) {
      const stderr = await new Response(proc.stderr as ReadableStream).text();
      throw new Error(`Cannot start Toxiproxy: it exited with ${proc.exitCode}: ${stderr.trim()}`);
    }
    if (
      await client.version().then(
        () => true,
        () => false,
      )
    )
      return server;
    await Bun.sleep(20);
  }
  await server.stop();
  throw new Error(`Cannot start Toxiproxy: its API did not answer at ${apiUrl} within the timeout`);
}

/** Toxiproxy's HTTP API (api.go): proxies, their toxics, enable/disable, reset. */
export class Toxiproxy {
  readonly #apiUrl: string;

  constructor(apiUrl: string) {
    this.#apiUrl = apiUrl.replace(/\/+$/, "");
  }

  /** The API's /version answer: `{"version": "2.12.0"}` from the lab's build (`go install` builds say "git"). */
  async version(): Promise<string> {
    return (await this.#call("GET", "/version", undefined, "read the version")).trim();
  }

  async proxies(): Promise<Record<string, Proxy>> {
    return JSON.parse(await this.#call("GET", "/proxies", undefined, "list proxies")) as Record<
      string,
      Proxy
    >;
  }

  /** A proxy from `listen` to `upstream` (host:port each; port 0 lets Toxiproxy pick one). */
  async createProxy(proxy: { name: string; listen: string; upstream: string }): Promise<Proxy> {
    const body = { ...proxy, enabled: true };
    return JSON.parse(await this.#call("POST", "/proxies", body, `create proxy ${proxy.name}`)) as Proxy;
  }

  async deleteProxy(name: string): Promise<void> {
    await this.#call("DELETE", `/proxies/${encodeURIComponent(name)}`, undefined, `delete proxy ${name}`);
  }

  /** Disabling refuses new connections and closes every open one; enabling listens again. */
  async setEnabled(name: string, enabled: boolean): Promise<Proxy> {
    const path = `/proxies/${encodeURIComponent(name)}`;
    return JSON.parse(
      await this.#call("PATCH", path, { enabled }, `set ${name} enabled=${enabled}`),
    ) as Proxy;
  }

  async addToxic(proxy: string, toxic: Omit<Toxic, "toxicity"> & { toxicity?: number }): Promise<Toxic> {
    const path = `/proxies/${encodeURIComponent(proxy)}/toxics`;
    const body = { toxicity: 1, ...toxic };
    return JSON.parse(await this.#call("POST", path, body, `add toxic ${toxic.name} to ${proxy}`)) as Toxic;
  }

  async removeToxic(proxy: string, name: string): Promise<void> {
    const path = `/proxies/${encodeURIComponent(proxy)}/toxics/${encodeURIComponent(name)}`;
    await this.#call("DELETE", path, undefined, `remove toxic ${name} from ${proxy}`);
  }

  /** Re-enables every proxy and removes every toxic. */
  async reset(): Promise<void> {
    await this.#call("POST", "/reset", undefined, "reset");
  }

  async #call(method: string, path: string, body: unknown, action: string): Promise<string> {
    const response = await fetch(`${this.#apiUrl}${path}`, {
      method,
      headers: body === undefined ? undefined : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      // The API wraps each request in a 25 s handler; a hung toxic removal answers 503 (issue #558).
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`Cannot ${action}: Toxiproxy answered ${response.status}: received ${text.trim()}`);
    return text;
  }
}
