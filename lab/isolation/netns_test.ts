/**
 * Hosts as network namespaces, for real: a server in one host answers a client in another across the bridge,
 * hosts reach the root namespace's services at the gateway, and nothing is left behind: not by remove(),
 * not by a process killed with SIGKILL (the sweeper).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ownerOf, processStartTicks, RECORDS_DIR, recordOwned } from "../shared/owner_record.ts";
import {
  createNetwork,
  linkNames,
  type Network,
  namespaceNames,
  netnsUnavailable,
  sweepNetworks,
} from "./netns.ts";

const created: Network[] = [];
afterAll(() => {
  for (const network of created) network.remove();
});

const namespaces = namespaceNames;
const links = linkNames;

/** Runs a Bun script inside a host (or the root namespace) and waits for its first line. */
async function serveIn(argv: string[], hostname: string): Promise<{ stop: () => void }> {
  const proc = Bun.spawn(
    [
      ...argv,
      "bun",
      "-e",
      `Bun.serve({ hostname: "${hostname}", port: 18080, fetch: (r) => new Response("hello from ${hostname}") }); console.log("ready");`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  await proc.stdout.getReader().read();
  return { stop: () => proc.kill("SIGKILL") };
}

function fetchIn(argv: string[], url: string): string {
  const proc = Bun.spawnSync([...argv, "curl", "-s", "--max-time", "3", url], {
    stdout: "pipe",
    stderr: "pipe",
  });
  return proc.stdout.toString();
}

describe("hosts", () => {
  test("this machine can make hosts (root, iproute2, network namespaces)", () => {
    expect(netnsUnavailable()).toBeNull();
  });

  test("a server in one host answers a client in another, and hosts reach the root namespace at the gateway", async () => {
    const network = createNetwork(["server", "loadgen1"]);
    created.push(network);
    const [server, loadgen] = network.hosts;
    if (!server || !loadgen) throw new Error("two hosts expected");
    expect(server.address).toMatch(/^198\.18\.\d+\.10$/);
    expect(loadgen.address).toMatch(/^198\.18\.\d+\.11$/);
    expect(network.gateway).toMatch(/^198\.18\.\d+\.1$/);
    const inServer = await serveIn(server.command([]), server.address);
    const inRoot = await serveIn([], network.gateway);
    try {
      expect(fetchIn(loadgen.command([]), `http://${server.address}:18080/`)).toBe(
        `hello from ${server.address}`,
      );
      expect(fetchIn([], `http://${server.address}:18080/`)).toBe(`hello from ${server.address}`);
      expect(fetchIn(server.command([]), `http://${network.gateway}:18080/`)).toBe(
        `hello from ${network.gateway}`,
      );
      // Each host has its own stack: the server is not on the client's loopback.
      expect(fetchIn(loadgen.command([]), "http://127.0.0.1:18080/")).toBe("");
    } finally {
      inServer.stop();
      inRoot.stop();
    }
    network.remove();
    expect(namespaces().filter((name) => network.hosts.some((host) => host.namespace === name))).toEqual([]);
    expect(
      links().filter((name) => name === network.bridge || name.startsWith(`clv-${network.bridge.slice(4)}`)),
    ).toEqual([]);
    network.remove(); // idempotent
  });

  test("two networks at once get their own subnets; bad names are refused and leave nothing", () => {
    const a = createNetwork(["x"]);
    const b = createNetwork(["x"]);
    created.push(a, b);
    expect(a.gateway).not.toBe(b.gateway);
    a.remove();
    b.remove();
    const before = [namespaces(), links()];
    expect(() => createNetwork(["Server"])).toThrow("a name is [a-z][a-z0-9]{0,15}");
    expect(() => createNetwork(["a", "a"])).toThrow("names must differ");
    expect([namespaces(), links()]).toEqual(before);
  });

  test("what a process killed with SIGKILL left behind is swept, and a live process's network is not", async () => {
    const mine = createNetwork(["live"]);
    created.push(mine);
    const proc = Bun.spawn(["bun", join(import.meta.dir, "testdata", "netns_owner.ts")], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const { value } = await proc.stdout.getReader().read();
    const left = JSON.parse(new TextDecoder().decode(value)) as { bridge: string; namespaces: string[] };
    proc.kill("SIGKILL");
    await proc.exited;
    expect(namespaces()).toEqual(expect.arrayContaining(left.namespaces));
    expect(left.namespaces.map((name) => ownerOf("netns", name)?.pid)).toEqual([proc.pid, proc.pid]);
    const removed = sweepNetworks();
    expect(removed).toEqual(
      expect.arrayContaining([...left.namespaces.map((n) => `namespace ${n}`), `link ${left.bridge}`]),
    );
    expect(namespaces().filter((name) => left.namespaces.includes(name))).toEqual([]);
    expect(links()).not.toContain(left.bridge);
    // This process is alive: its network stays.
    expect(namespaces()).toContain(mine.hosts[0]?.namespace ?? "(no host)");
    expect(left.namespaces.map((name) => ownerOf("netns", name))).toEqual([null, null]);
    mine.remove();
    expect(ownerOf("netns", mine.hosts[0]?.namespace ?? "(no host)")).toBeNull();
    expect(ownerOf("link", mine.bridge)).toBeNull();
  });

  test("a cachelab-* namespace or bridge without a lab record survives the sweep, whatever its name parses to", async () => {
    const gone = Bun.spawn(["true"]);
    await gone.exited; // its pid now names an owner that no longer runs
    const owner = gone.pid.toString(36);
    const namespace = `cachelab-${owner}-0-foreign`;
    const bridge = `clb-${owner}-f`;
    const reused = `cachelab-${process.pid.toString(36)}-z-reused`;
    Bun.spawnSync(["ip", "netns", "add", namespace]);
    Bun.spawnSync(["ip", "link", "add", bridge, "type", "bridge"]);
    // A record with this process's pid but another start time: a killed run's, its pid since reused.
    recordOwned("netns", reused);
    const ticks = processStartTicks(process.pid) ?? 0;
    writeFileSync(
      join(RECORDS_DIR, "netns", reused),
      JSON.stringify({ pid: process.pid, startTicks: ticks - 1 }),
    );
    Bun.spawnSync(["ip", "netns", "add", reused]);
    try {
      expect(namespaces()).toEqual(expect.arrayContaining([namespace, reused]));
      const removed = sweepNetworks();
      expect(removed).toContain(`namespace ${reused}`);
      expect(removed).not.toContain(`namespace ${namespace}`);
      expect(removed).not.toContain(`link ${bridge}`);
      expect(namespaces()).toContain(namespace);
      expect(namespaces()).not.toContain(reused);
      expect(links()).toContain(bridge);
      expect(ownerOf("netns", reused)).toBeNull(); // its record goes with it
      expect(existsSync(join(RECORDS_DIR, "netns", namespace))).toBe(false); // nothing was recorded for it
    } finally {
      Bun.spawnSync(["ip", "netns", "del", namespace]);
      Bun.spawnSync(["ip", "netns", "del", reused]);
      Bun.spawnSync(["ip", "link", "del", bridge]);
    }
  });
});
