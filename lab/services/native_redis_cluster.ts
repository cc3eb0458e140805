/**
 * A Redis Cluster of three masters cachelab starts itself, for the tests and `--redis-cluster` runs: three
 * redis-server processes with cluster mode on, each on a free port with a cluster bus port of its own, the
 * lab's Redis password required (requirepass, and masterauth for the nodes' own links), joined by
 * `redis-cli --cluster create … --cluster-replicas 0 --cluster-yes` and ready once every node says
 * `cluster_state:ok`; and its stop, which also removes the nodes' folders (their nodes.conf included).
 *
 * Each node works in <stateDir>/redis-cluster/<port>/ (its nodes.conf and log), owned by the user it runs as.
 * `cluster-require-full-coverage no`: with one master gone the others keep serving their slots.
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { Redis } from "ioredis";
import { freePort } from "../shared/ports.ts";
import { readCredentials } from "./credentials.ts";
import {
  findServiceUser,
  runsAsRoot,
  spawnDetached,
  traversableByOthers,
  unprivilegedSpawn,
} from "./run_as.ts";
import {
  type Context,
  ensureOwnedDir,
  errorMessage,
  logTail,
  ourProcess,
  processStamp,
  READY_TIMEOUT_MS,
  type RedisClusterRecord,
  readState,
  STOP_TIMEOUT_MS,
  stateDirMode,
  waitForExit,
  writeState,
} from "./state.ts";

const PROGRAM = "redis-server";
/** The masters a lab cluster has: the fewest Redis Cluster accepts without replicas. */
export const CLUSTER_MASTERS = 3;

/** How a cluster is reached: `host:port` of every master (REDIS_CLUSTER_NODES) and the password. */
export interface RedisClusterInfo {
  nodes: string[];
  password: string;
  version: string | null;
}

/** A client of one node (not the cluster): for CLUSTER INFO, or to talk to that node alone. */
export function nodeClient(node: string, password: string): Redis {
  const [host, port] = node.split(":");
  return new Redis(Number(port), host ?? "127.0.0.1", {
    password,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
    retryStrategy: () => null,
  });
}

/** A node's `CLUSTER INFO` field `name`, or why it could not be read. */
async function clusterInfo(
  node: string,
  password: string,
): Promise<{ fields: Map<string, string> } | { problem: string }> {
  const client = nodeClient(node, password);
  client.on("error", () => {});
  try {
    await client.connect();
    const text = String(await client.call("CLUSTER", "INFO"));
    const fields = new Map(
      text
        .split("\r\n")
        .filter((line) => line.includes(":"))
        .map((line) => line.split(":", 2) as [string, string]),
    );
    return { fields };
  } catch (error) {
    return { problem: errorMessage(error) };
  } finally {
    client.disconnect();
  }
}

/** Whether every node reports `cluster_state:ok` with all 16 384 slots assigned; else the first problem. */
export async function clusterReady(nodes: string[], password: string): Promise<string | null> {
  for (const node of nodes) {
    const info = await clusterInfo(node, password);
    if ("problem" in info) return `${node}: ${info.problem}`;
    const state = info.fields.get("cluster_state");
    const slots = info.fields.get("cluster_slots_assigned");
    if (state !== "ok" || slots !== "16384") return `${node}: cluster_state:${state} slots:${slots}`;
  }
  return null;
}

/** The recorded cluster when every node is ours, alive and the cluster is ok; else null (a stale one stopped). */
export async function findRedisCluster(
  ctx: Context,
  purpose: "up" | "status",
): Promise<RedisClusterInfo | null> {
  const record = readState(ctx).redisCluster;
  if (record === undefined) return null;
  const { redisPassword } = readCredentials(ctx);
  const nodes = record.nodes.map((node) => `127.0.0.1:${node.port}`);
  const alive = record.nodes.every((node) => "pid" in ourProcess(node, PROGRAM));
  const problem = alive ? await clusterReady(nodes, redisPassword) : "a node is not running";
  if (problem === null) {
    if (purpose === "up") ctx.log(`redis cluster: reusing the native cluster on ${nodes.join(",")}`);
    return { nodes, password: redisPassword, version: await nodeVersion(nodes[0] as string, redisPassword) };
  }
  if (purpose === "up") {
    ctx.log(`redis cluster: the recorded cluster is not usable (${problem}); starting a new one`);
    for (const line of await stopNativeRedisCluster(ctx)) ctx.log(line);
  }
  return null;
}

async function nodeVersion(node: string, password: string): Promise<string | null> {
  const client = nodeClient(node, password);
  client.on("error", () => {});
  try {
    await client.connect();
    return /redis_version:(\S+)/.exec(await client.info("server"))?.[1] ?? null;
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

/** Distinct free ports: one per node and one per node's cluster bus. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Starts three nodes, joins them into one cluster, waits for `cluster_state:ok`; null without the binaries. */
export async function startNativeRedisCluster(ctx: Context): Promise<RedisClusterInfo | null> {
  const redisServer = Bun.which(PROGRAM, { PATH: ctx.env.PATH ?? "" });
  const redisCli = Bun.which("redis-cli", { PATH: ctx.env.PATH ?? "" });
  if (!redisServer || !redisCli) return null;
  const { redisPassword } = readCredentials(ctx);
  const user = runsAsRoot() ? findServiceUser(["redis", "nobody"]) : null;
  // The nodes' user must reach their folders: under a checkout it cannot pass through (as root, in a
  // private home), a folder of mkdtemp's instead, removed with the nodes.
  ensureOwnedDir(ctx.stateDir, stateDirMode());
  const root =
    user && !traversableByOthers(ctx.stateDir)
      ? mkdtempSync(join(tmpdir(), "cachelab-redis-cluster-"))
      : join(ctx.stateDir, "redis-cluster");
  ensureOwnedDir(root, stateDirMode());
  const ports = await freePorts(CLUSTER_MASTERS * 2);
  const startedMs = performance.now();
  const record: RedisClusterRecord = { mode: "native", nodes: [] };
  const procs: { proc: Subprocess; logFile: string; node: string }[] = [];
  for (let i = 0; i < CLUSTER_MASTERS; i++) {
    const port = ports[i] as number;
    const dir = join(root, String(port));
    rmSync(dir, { recursive: true, force: true }); // a nodes.conf left there would name another cluster
    ensureOwnedDir(dir, 0o700);
    if (user) chownSync(dir, user.uid, user.gid);
    const config = [
      `port ${port}`,
      `cluster-port ${ports[CLUSTER_MASTERS + i]}`,
      "bind 127.0.0.1",
      "protected-mode yes",
      `requirepass ${redisPassword}`,
      `masterauth ${redisPassword}`,
      "cluster-enabled yes",
      "cluster-config-file nodes.conf",
      "cluster-node-timeout 2000",
      "cluster-require-full-coverage no",
      `dir ${dir}`,
      'save ""',
      "appendonly no",
      "daemonize no",
      'logfile ""',
    ].join("\n");
    // The pidfile and log sit beside the folder, which the node's user owns.
    const pidFile = join(root, `${port}.pid`);
    const logFile = join(root, `${port}.log`);
    const proc = spawnDetached(unprivilegedSpawn(user, redisServer, ["-"]), {
      logFile,
      pidFile,
      env: { PATH: ctx.env.PATH ?? "/usr/bin:/bin" },
      stdin: `${config}\n`,
    });
    procs.push({ proc, logFile, node: `127.0.0.1:${port}` });
    const stamp = processStamp(proc.pid) ?? undefined;
    const url = `redis://:${redisPassword}@127.0.0.1:${port}`;
    record.nodes.push({ mode: "native", url, port, pidFile, dataDir: dir, process: stamp });
    // Recorded as each node exists, so a start that fails halfway is still stopped by `services down`.
    writeState(ctx, { ...readState(ctx), redisCluster: record });
  }
  const nodes = procs.map((p) => p.node);
  const failed = () => procs.find((p) => p.proc.exitCode !== null || p.proc.signalCode !== null);
  const deadlineMs = performance.now() + READY_TIMEOUT_MS;
  for (const { node, logFile } of procs) {
    while ("problem" in (await clusterInfo(node, redisPassword))) {
      const dead = failed();
      if (dead || performance.now() > deadlineMs) {
        throw new Error(
          `Cannot start the Redis cluster: ${node} never answered${logTail(dead?.logFile ?? logFile)}`,
        );
      }
      await Bun.sleep(20);
    }
  }
  // The password goes in through REDISCLI_AUTH, on no command line.
  const create = Bun.spawn(
    [redisCli, "--cluster", "create", ...nodes, "--cluster-replicas", "0", "--cluster-yes"],
    {
      env: { PATH: ctx.env.PATH ?? "/usr/bin:/bin", REDISCLI_AUTH: redisPassword },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      timeout: READY_TIMEOUT_MS,
    },
  );
  const output = (await new Response(create.stdout).text()) + (await new Response(create.stderr).text());
  if ((await create.exited) !== 0) {
    throw new Error(
      `Cannot create the Redis cluster: redis-cli --cluster create exited ${create.exitCode}: received ${output.trim().split("\n").slice(-5).join(" | ")}`,
    );
  }
  let problem = await clusterReady(nodes, redisPassword);
  while (problem !== null) {
    if (failed() || performance.now() > deadlineMs) {
      throw new Error(
        `Cannot start the Redis cluster: not ready within ${READY_TIMEOUT_MS} ms: received ${problem}`,
      );
    }
    await Bun.sleep(50);
    problem = await clusterReady(nodes, redisPassword);
  }
  const as = user ? ` as ${user.name}` : "";
  ctx.log(
    `redis cluster: started ${CLUSTER_MASTERS} native masters${as} on ${nodes.join(",")} (password required) in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return { nodes, password: redisPassword, version: await nodeVersion(nodes[0] as string, redisPassword) };
}

/** Stops the recorded cluster's nodes (only processes that are ours) and removes their folders. */
export async function stopNativeRedisCluster(ctx: Context): Promise<string[]> {
  const state = readState(ctx);
  const record = state.redisCluster;
  if (record === undefined) return [];
  const lines: string[] = [];
  for (const node of record.nodes) {
    const ours = ourProcess(node, PROGRAM);
    if ("problem" in ours) {
      lines.push(`redis cluster: node on port ${node.port} was not running (${ours.problem}; not signalled)`);
    } else {
      process.kill(ours.pid, "SIGTERM");
      if (!(await waitForExit(ours.pid, PROGRAM, STOP_TIMEOUT_MS))) {
        process.kill(ours.pid, "SIGKILL");
        if (!(await waitForExit(ours.pid, PROGRAM, STOP_TIMEOUT_MS))) {
          throw new Error(
            `Cannot stop the Redis cluster: still running after SIGKILL: received pid ${ours.pid}`,
          );
        }
      }
      lines.push(`redis cluster: stopped node (pid ${ours.pid}, port ${node.port})`);
    }
    for (const path of [node.dataDir, node.pidFile, node.pidFile.replace(/\.pid$/, ".log")]) {
      if (existsSync(path)) rmSync(path, { recursive: true, force: true });
    }
    // A folder of mkdtemp's (a private checkout as root) goes too once empty.
    const parent = dirname(node.dataDir);
    if (
      parent.startsWith(join(tmpdir(), "cachelab-redis-cluster-")) &&
      existsSync(parent) &&
      readdirSync(parent).length === 0
    ) {
      rmSync(parent, { recursive: true, force: true });
    }
  }
  delete state.redisCluster;
  writeState(ctx, state);
  return lines;
}
