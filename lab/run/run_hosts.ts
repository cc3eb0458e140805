/**
 * Where a run's servers and load go: one port per instance the largest cell starts (every cell's instance i
 * listens on ports[i]), and hosts of their own (network namespaces made for the run, removed with it) for
 * load generators and for a server a cell puts apart. Postgres, Redis and Toxiproxy stay on the root
 * namespace; with generators apart the server listens on the bridge's address, a server apart on its host's.
 */
import type { RemoteServer } from "../cell/remote.ts";
import { createNetwork, type Host, type Network, netnsUnavailable } from "../isolation/netns.ts";
import { type Cell, cellSettings, type Experiment, maxInstances } from "../plan/experiment_plan.ts";
import { freePort } from "../shared/ports.ts";

export interface RunHosts {
  ports: number[];
  /** The run's hosts; null without any, and in a dry run (which makes none). */
  network: Network | null;
  serverHost: Host | null;
  loadgenHosts: Host[];
  /** The root namespace's address on the bridge (a placeholder in a dry run). */
  gateway: string;
  /** Where a cell's servers listen: their own host's address, the bridge's for generators apart, or loopback. */
  listenHostFor(apart: boolean): string;
  /** A cell's base URLs: the remote servers', or one per port on its listen address. */
  urlsFor(apart: boolean): string[];
}

/** The run's ports and hosts, or why the run cannot have them. */
export async function openRunHosts(
  exp: Experiment,
  cellList: Cell[],
  options: { name: string; remote: RemoteServer[] | null; dryRun: boolean },
): Promise<RunHosts | string> {
  const { remote } = options;
  const ports: number[] = [];
  while (remote === null && ports.length < maxInstances(exp)) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const loadgensNeeded =
    remote === null ? Math.max(0, ...exp.attacks.map((attack) => attack.loadgenHosts ?? 0)) : 0;
  const serverApart = remote === null && cellList.some((cell) => cellSettings(exp, cell).apart);
  if ((loadgensNeeded > 0 || serverApart) && netnsUnavailable() !== null) {
    const what = serverApart ? "its server" : "load generators";
    return `${options.name} runs ${what} on hosts of their own: ${netnsUnavailable()}`;
  }
  const hostNames = [
    ...(serverApart ? ["server"] : []),
    ...Array.from({ length: loadgensNeeded }, (_, i) => `loadgen${i + 1}`),
  ];
  const network = hostNames.length > 0 && !options.dryRun ? createNetwork(hostNames) : null;
  const serverHost = network?.hosts.find((host) => host.name === "server") ?? null;
  const gateway = network?.gateway ?? "198.18.k.1";
  const listenHostFor = (apart: boolean): string =>
    apart ? (serverHost?.address ?? "198.18.k.10") : loadgensNeeded > 0 ? gateway : "127.0.0.1";
  return {
    ports,
    network,
    serverHost,
    loadgenHosts: network?.hosts.filter((host) => host.name !== "server") ?? [],
    gateway,
    listenHostFor,
    urlsFor: (apart) =>
      remote?.map((server) => server.url) ?? ports.map((port) => `http://${listenHostFor(apart)}:${port}`),
  };
}
