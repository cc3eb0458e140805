/**
 * A cell's network: the services its server reaches through Toxiproxy (one proxy each, created for the cell
 * and deleted after it), the distance each attack adds to them, and the faults each measured run injects at
 * set times. Everything else reaches the services directly.
 */
import {
  type ExperimentAttack,
  type Fault,
  faultLabel,
  type NetworkPath,
  type ProxiedService,
} from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { hostPort } from "../services/probe.ts";
import { freeLowPort, type Toxiproxy } from "./toxiproxy.ts";

/** A fault as it happened: wall-clock times of the moment it was in force and the moment it was lifted. */
export interface FaultWindow {
  label: string;
  fault: Fault;
  startEpochMs: number;
  endEpochMs: number;
  /** Why the fault could not be injected or lifted as planned; such a run cannot be trusted. */
  error: string | null;
}

export interface CellNetwork {
  /** The services as the cell's server reaches them: proxied ones point at their proxy. */
  services: Services;
  proxied: ProxiedService[];
  /** Puts the attack's distance on every proxy (and takes the previous attack's off). */
  applyPath(attack: ExperimentAttack): Promise<void>;
  /** Runs `faults` from `startEpochMs` until each is lifted, or lifts them early when `signal` aborts. */
  runFaults(faults: Fault[], startEpochMs: number, signal: AbortSignal): Promise<FaultWindow[]>;
  /** Deletes the cell's proxies. */
  close(): Promise<void>;
}

const DIRECT = "direct";

/** How the server reaches `service` during `attack`, for the row: `direct`, or the proxy and its toxics. */
export function describePath(attack: ExperimentAttack, service: ProxiedService, proxied: boolean): string {
  if (!proxied) return DIRECT;
  const path = attack.network?.[service];
  const parts = ["toxiproxy"];
  if (path && path.latencyMs > 0) {
    parts.push(`+${path.latencyMs} ms each way${path.jitterMs ? ` ±${path.jitterMs} ms` : ""}`);
  }
  if (path?.bandwidthKBps !== undefined) parts.push(`${path.bandwidthKBps} KB/s each way`);
  return parts.join(" ");
}

/**
 * The round trip (ms) the plan adds to every command to `service` during `attack`: twice the latency on each
 * way of its proxy (jitter averages out; a bandwidth cap adds more, by size, and only the path says so); 0
 * direct.
 */
export function addedRoundTripMs(
  attack: ExperimentAttack,
  service: ProxiedService,
  proxied: boolean,
): number {
  if (!proxied) return 0;
  return Math.round(2 * (attack.network?.[service]?.latencyMs ?? 0) * 1_000) / 1_000;
}

/** `redis down at 5 s for 5 s; redis hang at 15 s for 5 s`, or null without faults. */
export function describeFaults(faults: Fault[] | undefined): string | null {
  if (!faults || faults.length === 0) return null;
  return faults.map((fault) => `${faultLabel(fault)} at ${fault.atS} s for ${fault.durationS} s`).join("; ");
}

function withHostPort(url: string, port: number, host = "127.0.0.1"): string {
  const parsed = new URL(url);
  parsed.hostname = host;
  parsed.port = String(port);
  return parsed.toString();
}

const LATENCY_TOXICS = ["distance_up", "distance_down"];
const HANG_TOXICS = ["hang_up", "hang_down"];
const BANDWIDTH_TOXICS = ["bandwidth_up", "bandwidth_down"];
const RESET_TOXIC = "reset_up";

/** Creates the cell's proxies (none when `names` is empty: everything stays direct). */
export async function openCellNetwork(
  client: Toxiproxy | null,
  services: Services,
  names: ProxiedService[],
  tag: string,
  /** The address the proxies listen on: 127.0.0.1, or the bridge's when the server is in a host of its own. */
  listenHost = "127.0.0.1",
): Promise<CellNetwork> {
  if (names.length > 0 && client === null) {
    throw new Error(`Cannot route ${names.join(" and ")} through Toxiproxy: it is not running`);
  }
  const proxies = new Map<ProxiedService, string>();
  const routed: Services = { ...services };
  const close = async () => {
    for (const name of proxies.values()) await client?.deleteProxy(name).catch(() => {});
    proxies.clear();
  };
  try {
    let port = await freeLowPort();
    for (const service of names) {
      const name = `${tag}-${service}`;
      const url = service === "redis" ? services.redisUrl : services.databaseUrl;
      // A stale proxy of the same name (an interrupted run) would answer 409.
      await client?.deleteProxy(name).catch(() => {});
      await (client as Toxiproxy).createProxy({
        name,
        listen: `${listenHost}:${port}`,
        upstream: hostPort(url),
      });
      proxies.set(service, name);
      if (service === "redis") routed.redisUrl = withHostPort(url, port, listenHost);
      else routed.databaseUrl = withHostPort(url, port, listenHost);
      port = await freeLowPort(port + 1);
    }
  } catch (error) {
    await close();
    throw error;
  }
  const proxyOf = (service: ProxiedService): string => {
    const name = proxies.get(service);
    if (name === undefined)
      throw new RangeError(`Cannot inject into ${service}: it is not proxied in this cell`);
    return name;
  };
  const toxiproxy = client as Toxiproxy;

  async function applyPath(attack: ExperimentAttack): Promise<void> {
    for (const [service, proxy] of proxies) {
      const current = (await toxiproxy.proxies())[proxy];
      for (const toxic of current?.toxics ?? []) await toxiproxy.removeToxic(proxy, toxic.name);
      if (!current?.enabled) await toxiproxy.setEnabled(proxy, true);
      const path: NetworkPath | undefined = attack.network?.[service];
      if (path?.bandwidthKBps !== undefined) {
        for (const [index, stream] of (["upstream", "downstream"] as const).entries()) {
          await toxiproxy.addToxic(proxy, {
            name: BANDWIDTH_TOXICS[index] as string,
            type: "bandwidth",
            stream,
            attributes: { rate: path.bandwidthKBps },
          });
        }
      }
      if (!path || path.latencyMs <= 0) continue;
      // latency_us (the lab's Toxiproxy build, tools/toxiproxy): the stock latency toxic takes whole ms.
      for (const [index, stream] of (["upstream", "downstream"] as const).entries()) {
        await toxiproxy.addToxic(proxy, {
          name: LATENCY_TOXICS[index] as string,
          type: "latency_us",
          stream,
          attributes: {
            latency: Math.round(path.latencyMs * 1_000),
            jitter: Math.round((path.jitterMs ?? 0) * 1_000),
          },
        });
      }
    }
  }

  async function inject(fault: Fault): Promise<void> {
    const proxy = proxyOf(fault.service);
    if (fault.kind === "down") {
      await toxiproxy.setEnabled(proxy, false);
      return;
    }
    if (fault.kind === "reset") {
      // Each connection is reset (RST) when it next sends: commands in flight fail, reconnects fail again.
      await toxiproxy.addToxic(proxy, {
        name: RESET_TOXIC,
        type: "reset_peer",
        stream: "upstream",
        attributes: { timeout: 0 },
      });
      return;
    }
    for (const [index, stream] of (["upstream", "downstream"] as const).entries()) {
      await toxiproxy.addToxic(proxy, {
        name: HANG_TOXICS[index] as string,
        type: "timeout",
        stream,
        attributes: { timeout: 0 },
      });
    }
  }

  async function lift(fault: Fault): Promise<void> {
    const proxy = proxyOf(fault.service);
    if (fault.kind === "down") {
      await toxiproxy.setEnabled(proxy, true);
      return;
    }
    if (fault.kind === "reset") {
      await toxiproxy.removeToxic(proxy, RESET_TOXIC);
      return;
    }
    for (const name of HANG_TOXICS) await toxiproxy.removeToxic(proxy, name);
  }

  async function runFaults(
    faults: Fault[],
    startEpochMs: number,
    signal: AbortSignal,
  ): Promise<FaultWindow[]> {
    const windows: FaultWindow[] = [];
    // Short steps, so an abort (the run ended) lifts a fault within a few tens of ms.
    const sleepUntil = async (epochMs: number) => {
      while (!signal.aborted && Date.now() < epochMs) await Bun.sleep(Math.min(epochMs - Date.now(), 20));
    };
    for (const fault of [...faults].sort((a, b) => a.atS - b.atS)) {
      await sleepUntil(startEpochMs + fault.atS * 1_000);
      if (signal.aborted) break;
      const window: FaultWindow = {
        label: faultLabel(fault),
        fault,
        startEpochMs: Number.NaN,
        endEpochMs: Number.NaN,
        error: null,
      };
      windows.push(window);
      try {
        await inject(fault);
        window.startEpochMs = Date.now();
      } catch (error) {
        window.error = `cannot inject ${window.label}: ${(error as Error).message}`;
      }
      await sleepUntil(startEpochMs + (fault.atS + fault.durationS) * 1_000);
      try {
        await lift(fault);
        window.endEpochMs = Date.now();
      } catch (error) {
        window.error ??= `cannot lift ${window.label}: ${(error as Error).message}`;
      }
      if (signal.aborted && Number.isFinite(window.endEpochMs)) {
        window.error ??= `${window.label} was lifted early: the run ended before ${fault.atS + fault.durationS} s`;
      }
    }
    return windows;
  }

  return { services: routed, proxied: [...proxies.keys()], applyPath, runFaults, close };
}

/** Why the faults as they happened cannot stand for the plan, or null when each ran as planned. */
export function faultProblems(faults: Fault[], windows: FaultWindow[]): string | null {
  const problems = windows.flatMap((window) => (window.error === null ? [] : [window.error]));
  if (windows.length < faults.length) {
    problems.push(
      `${faults.length - windows.length} of ${faults.length} faults never started: the run ended first`,
    );
  }
  return problems.length === 0 ? null : `faults: ${problems.join("; ")}`;
}
