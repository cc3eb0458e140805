/**
 * Hosts on one machine: each a Linux network namespace with its own network stack, joined to a bridge in the
 * root namespace by a veth pair, addressed from the benchmarking range 198.18.0.0/15 (RFC 2544). A process
 * started in a host (`host.command(argv)`) sees only that host's interfaces: its traffic to another host or
 * to the root namespace crosses veth, the bridge and the kernel's full TCP/IP path, not loopback.
 *
 * Layout of one network (k: the first free 198.18.k.0/24): the bridge `clb-<pid>-<n>` holds 198.18.k.1 in the
 * root namespace (where Postgres, Redis and Toxiproxy run); host i is the namespace
 * `cachelab-<pid>-<n>-<name>` with `eth0` at 198.18.k.(10 + i), its default route via the bridge. <pid> (base
 * 36) is the process that made it. Each namespace, bridge and veth also gets a record (owner_record.ts: the
 * maker's pid and start time), written before it is made: `sweepNetworks()` removes only what a record names
 * and whose maker is gone (a SIGKILL skips every cleanup), never a `cachelab-*` name without one, and every
 * `bun run experiment` sweeps before it starts. Needs root (CAP_NET_ADMIN) and iproute2; nothing else. On
 * real machines each host is a machine: see docs/services.md, "Hosts".
 */
import { existsSync } from "node:fs";
import {
  forgetOwned,
  leftByDeadRun,
  type OwnedKind,
  recordedNames,
  recordOwned,
} from "../shared/owner_record.ts";

/** A host: its namespace, its address, and how to run a command in it. */
export interface Host {
  name: string;
  namespace: string;
  address: string;
  /** `argv` run inside the host's namespace (`ip netns exec`). */
  command(argv: string[]): string[];
}

export interface Network {
  /** The bridge in the root namespace. */
  bridge: string;
  /** The root namespace's address on the bridge: how hosts reach the machine's own services. */
  gateway: string;
  hosts: Host[];
  /** Removes the namespaces (their veth pairs go with them) and the bridge; idempotent. */
  remove(): void;
}

const PREFIX = "cachelab-";
const BRIDGE_PREFIX = "clb-";
const VETH_PREFIX = "clv-";
/** Linux interface names hold at most 15 bytes. */
const IFNAMSIZ = 15;
const HOST_NAME = /^[a-z][a-z0-9]{0,15}$/;

let counter = 0;
const live = new Set<Network>();
let exitHookInstalled = false;

function ip(args: string[], what: string): string {
  const proc = Bun.spawnSync(["ip", ...args], { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) {
    throw new Error(
      `Cannot ${what}: ip ${args.join(" ")} exited ${proc.exitCode}: ${proc.stderr.toString().trim()}`,
    );
  }
  return proc.stdout.toString();
}

/** Like `ip`, for cleanup: a failure (already gone) is ignored. */
function ipQuiet(args: string[]): void {
  Bun.spawnSync(["ip", ...args], { stdout: "ignore", stderr: "ignore" });
}

/** Why this machine cannot make hosts, or null when it can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "network namespaces need root (CAP_NET_ADMIN)";
  if (Bun.which("ip") === null) return "iproute2's `ip` is not installed (apt-get install iproute2)";
  if (!existsSync("/proc/self/ns/net")) return "this kernel has no network namespaces";
  return null;
}

/** The third octet of every 198.18.k.0/24 a bridge on this machine already holds. */
function usedSubnets(): Set<number> {
  const used = new Set<number>();
  for (const match of ip(["-o", "-4", "addr", "show"], "list addresses").matchAll(/inet 198\.18\.(\d+)\./g)) {
    used.add(Number(match[1]));
  }
  return used;
}

/**
 * A network of `hostNames` (each [a-z][a-z0-9]*, up to 16 characters). Throws, leaving nothing behind, when a
 * step fails; remove it with `network.remove()` (also done at process exit).
 */
export function createNetwork(hostNames: string[]): Network {
  const unavailable = netnsUnavailable();
  if (unavailable) throw new Error(`Cannot create hosts: ${unavailable}`);
  if (hostNames.length === 0 || hostNames.length > 200) {
    throw new RangeError(`Cannot create hosts: 1..200 names expected: received ${hostNames.length}`);
  }
  for (const name of hostNames) {
    if (!HOST_NAME.test(name)) {
      throw new RangeError(
        `Cannot create hosts: a name is [a-z][a-z0-9]{0,15}: received ${JSON.stringify(name)}`,
      );
    }
  }
  if (new Set(hostNames).size !== hostNames.length) {
    throw new RangeError(`Cannot create hosts: names must differ: received ${hostNames.join(", ")}`);
  }
  const owner = process.pid.toString(36);
  const n = (counter++).toString(36);
  const bridge = `${BRIDGE_PREFIX}${owner}-${n}`;
  if (bridge.length + 3 > IFNAMSIZ) throw new Error(`Cannot name the bridge: ${bridge} is too long`);
  const used = usedSubnets();
  const k = Array.from({ length: 256 }, (_, i) => i).find((i) => !used.has(i));
  if (k === undefined) throw new Error("Cannot create hosts: every 198.18.k.0/24 is in use");
  const gateway = `198.18.${k}.1`;
  const hosts: Host[] = [];
  const veths: string[] = [];
  /** What this network recorded, each before making it (so a kill between the two leaves a record, not a stray). */
  const records: [OwnedKind, string][] = [];
  const recorded = (kind: OwnedKind, name: string) => {
    recordOwned(kind, name);
    records.push([kind, name]);
  };
  const network: Network = {
    bridge,
    gateway,
    hosts,
    remove() {
      // The veth pairs first (deleting one end deletes both): a namespace's own links go only when the
      // kernel gets round to destroying it, some time after `netns del`.
      for (const veth of veths) ipQuiet(["link", "del", veth]);
      for (const host of hosts) ipQuiet(["netns", "del", host.namespace]);
      ipQuiet(["link", "del", bridge]);
      for (const [kind, name] of records) forgetOwned(kind, name);
      live.delete(network);
    },
  };
  live.add(network);
  if (!exitHookInstalled) {
    process.on("exit", () => {
      for (const open of live) open.remove();
    });
    exitHookInstalled = true;
  }
  try {
    recorded("link", bridge);
    ip(["link", "add", bridge, "type", "bridge"], "create the bridge");
    ip(["addr", "add", `${gateway}/24`, "dev", bridge], "address the bridge");
    ip(["link", "set", bridge, "up"], "bring the bridge up");
    hostNames.forEach((name, i) => {
      const namespace = `${PREFIX}${owner}-${n}-${name}`;
      const address = `198.18.${k}.${10 + i}`;
      const rootSide = `${VETH_PREFIX}${owner}-${n}${i.toString(36)}`;
      const hostSide = `${rootSide}h`;
      if (hostSide.length > IFNAMSIZ) throw new Error(`Cannot name a veth pair: ${hostSide} is too long`);
      recorded("netns", namespace);
      ip(["netns", "add", namespace], `create host ${name}`);
      hosts.push({
        name,
        namespace,
        address,
        command: (argv) => ["ip", "netns", "exec", namespace, ...argv],
      });
      recorded("link", rootSide);
      ip(["link", "add", rootSide, "type", "veth", "peer", "name", hostSide], `link host ${name}`);
      veths.push(rootSide);
      ip(["link", "set", hostSide, "netns", namespace], `move ${name}'s link`);
      ip(["-n", namespace, "link", "set", hostSide, "name", "eth0"], `name ${name}'s link`);
      ip(["-n", namespace, "addr", "add", `${address}/24`, "dev", "eth0"], `address host ${name}`);
      ip(["-n", namespace, "link", "set", "eth0", "up"], `bring ${name}'s link up`);
      ip(["-n", namespace, "link", "set", "lo", "up"], `bring ${name}'s loopback up`);
      ip(["-n", namespace, "route", "add", "default", "via", gateway], `route host ${name}`);
      ip(["link", "set", rootSide, "master", bridge], `attach ${name} to the bridge`);
      ip(["link", "set", rootSide, "up"], `bring ${name}'s bridge port up`);
    });
  } catch (error) {
    network.remove();
    throw error;
  }
  return network;
}

/** Every network namespace on this machine, by name. */
export function namespaceNames(): string[] {
  return ip(["netns", "list"], "list namespaces")
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name !== "");
}

/** Every link of the root namespace, by name (a veth's `@peer` left off). */
export function linkNames(): string[] {
  return [...ip(["-o", "link", "show"], "list links").matchAll(/^\d+: ([^:@\s]+)/gm)].map(
    (match) => match[1] ?? "",
  );
}

/** The namespaces this process made (their names carry its pid). */
export function ownNamespaces(): string[] {
  const mine = `${PREFIX}${process.pid.toString(36)}-`;
  return namespaceNames().filter((name) => name.startsWith(mine));
}

/**
 * Removes the namespaces and links (bridges, veths) that a record proves a lab process made and that process
 * no longer runs (a killed run); returns what it removed. Those of running processes, this one included, and
 * any `cachelab-*` name without a record (someone else's) are left alone.
 */
export function sweepNetworks(): string[] {
  if (netnsUnavailable() !== null) return [];
  const removed: string[] = [];
  const namespaces = new Set(namespaceNames());
  const links = new Set(linkNames());
  for (const name of namespaces) {
    if (!name.startsWith(PREFIX) || !leftByDeadRun("netns", name)) continue;
    ipQuiet(["netns", "del", name]);
    forgetOwned("netns", name);
    removed.push(`namespace ${name}`);
  }
  for (const name of links) {
    if (!(name.startsWith(BRIDGE_PREFIX) || name.startsWith(VETH_PREFIX)) || !leftByDeadRun("link", name))
      continue;
    ipQuiet(["link", "del", name]);
    forgetOwned("link", name);
    removed.push(`link ${name}`);
  }
  // A dead run's record of something already gone (a veth goes with its namespace) is dropped too.
  for (const [kind, present] of [
    ["netns", namespaces],
    ["link", links],
  ] as const) {
    for (const name of recordedNames(kind)) {
      if (!present.has(name) && leftByDeadRun(kind, name)) forgetOwned(kind, name);
    }
  }
  return removed;
}
