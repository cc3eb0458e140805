import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectCpuCgroup } from "../isolation/cgroup_detect.ts";
import { freePort } from "../shared/ports.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { processUsage } from "./counters.ts";
import { type ServerProcess, startServer } from "./server_process.ts";

const support = detectCpuCgroup();
const noCgroup = support.method === "taskset";
if (noCgroup) console.error(`[server_process_test] cgroup tests skipped: ${support.reason}`);

// A stand-in for server.ts with the same contract (PORT, /ready) and one route that spins the CPU for
// `ms` of wall time: what it costs in CPU-seconds is what the limit allows. STARTUP_CPU_MS makes its start-up
// cost that much CPU before it listens, so a limit applied before readiness shows as throttling.
const work = mkdtempSync(join(testTmpdir(), "cachelab-server-process-"));
const SPINNER = join(work, "spinner.ts");
writeFileSync(
  SPINNER,
  `const startupCpuUs = Number(process.env.STARTUP_CPU_MS ?? 0) * 1_000;
for (let usage = process.cpuUsage(); usage.user + usage.system < startupCpuUs; usage = process.cpuUsage()) {}
Bun.serve({
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  reusePort: false,
  idleTimeout: 30,
  fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/ready") return new Response("ready");
    if (url.pathname !== "/spin") return new Response("not found", { status: 404 });
    const endMs = performance.now() + Number(url.searchParams.get("ms"));
    while (performance.now() < endMs) {}
    return new Response("spun");
  },
});
`,
);
const FAILING = join(work, "failing.ts");
writeFileSync(FAILING, `console.error("no database"); process.exit(1);\n`);

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** CPU-seconds per wall second the server spent spinning for `ms` of wall time. */
async function spinRate(server: ServerProcess, ms = 1_000): Promise<number> {
  const before = processUsage(server.pid);
  const startedMs = performance.now();
  const response = await fetch(`${server.url}/spin?ms=${ms}`);
  expect(await response.text()).toBe("spun");
  const after = processUsage(server.pid);
  if (before === null || after === null) throw new Error("the server is gone");
  return (after.cpuS - before.cpuS) / ((performance.now() - startedMs) / 1_000);
}

function cpuCgroupOf(pid: number): string | undefined {
  const lines = readFileSync(`/proc/${pid}/cgroup`, "utf8")
    .trim()
    .split("\n")
    .map((line) => line.split(":"));
  const v1 = lines.find(([, controllers]) => controllers?.split(",").includes("cpu"));
  return (v1 ?? lines.find(([id, controllers]) => id === "0" && controllers === ""))?.[2];
}

function groupDir(port: number): string {
  if (support.method === "taskset") throw new Error("no cgroup");
  return join(support.dir, `cachelab-server-${port}-${process.pid}`);
}

describe("startServer with a CPU limit", () => {
  test.skipIf(noCgroup)(
    "startServer with cpuLimit 0.2 runs the server in the limited group from start to stop, which removes it",
    async () => {
      const server = await startServer({ entry: SPINNER, env: { STARTUP_CPU_MS: "150" }, cpuLimit: 0.2 });
      const dir = groupDir(server.port);
      try {
        expect(server.cpuLimit).toBe(
          support.method === "cgroup-v1"
            ? "0.2 CPU (cgroup v1 cfs quota 20000/100000)"
            : "0.2 CPU (cgroup v2 cpu.max 20000 100000)",
        );
        expect(cpuCgroupOf(server.pid)).toEndWith(`/cachelab-server-${server.port}-${process.pid}`);
        expect(readFileSync(join(dir, "cgroup.procs"), "utf8").trim().split("\n").map(Number)).toContain(
          server.pid,
        );
        // Throttled before it answered /ready: its start-up already ran under the limit.
        const startup = server.cpuThrottling();
        console.error(`[server_process_test] throttling during start-up: ${JSON.stringify(startup)}`);
        expect(startup?.nrThrottled).toBeGreaterThan(0);
        const rate = await spinRate(server);
        console.error(`[server_process_test] 1 s spin under 0.2 CPU: ${rate.toFixed(3)} CPU-s/s`);
        expect(rate).toBeLessThan(0.4);
        expect(server.cpuThrottling()?.nrThrottled).toBeGreaterThan(startup?.nrThrottled ?? 0);
      } finally {
        await server.stop();
      }
      expect(existsSync(dir)).toBe(false);
      expect(server.cpuThrottling()).toBeNull();
    },
  );

  test("startServer without cpuLimit: the same spin uses most of a core, and cpuLimit is null", async () => {
    const server = await startServer({ entry: SPINNER, env: {} });
    try {
      expect(server.cpuLimit).toBeNull();
      expect(server.cpuThrottling()).toBeNull();
      // The best of up to three spins: another process on this machine can take a share of one second.
      const rates: number[] = [];
      while (rates.length < 3 && !rates.some((rate) => rate > 0.7)) rates.push(await spinRate(server));
      console.error(
        `[server_process_test] 1 s spin without a limit: ${rates.map((rate) => rate.toFixed(3))} CPU-s/s`,
      );
      expect(Math.max(...rates)).toBeGreaterThan(0.7);
    } finally {
      await server.stop();
    }
  });

  test("startServer with a forced taskset limit pins the server to whole cores", async () => {
    const server = await startServer({ entry: SPINNER, env: {}, cpuLimit: 0.5, cpuLimitMethod: "taskset" });
    try {
      expect(server.cpuLimit).toStartWith("1 CPU (taskset, whole cores only, asked 0.5; CPU ");
      const cpu = server.cpuLimit?.match(/CPU (\d+)\)$/)?.[1];
      const allowed = /^Cpus_allowed_list:\s*(\S+)$/m.exec(
        readFileSync(`/proc/${server.pid}/status`, "utf8"),
      )?.[1];
      expect(allowed).toBe(cpu as string);
      expect(server.cpuThrottling()).toBeNull();
    } finally {
      await server.stop();
    }
  });

  test.skipIf(noCgroup)("a server that exits during start-up leaves no cpu group behind", async () => {
    const port = await freePort();
    await expect(startServer({ entry: FAILING, env: {}, port, cpuLimit: 0.5 })).rejects.toThrow(
      "it exited with 1",
    );
    expect(existsSync(groupDir(port))).toBe(false);
  });

  test.skipIf(noCgroup)(
    "a runner that exits without stopping its limited server leaves no server and no cpu group",
    async () => {
      // The runner's second Ctrl-C calls process.exit, which skips every finally and every stop().
      const script = [
        `import { startServer } from ${JSON.stringify(join(import.meta.dir, "server_process.ts"))};`,
        `const server = await startServer({ entry: ${JSON.stringify(SPINNER)}, env: {}, cpuLimit: 0.5 });`,
        "console.log(JSON.stringify({ pid: server.pid, port: server.port }));",
        "process.exit(130);",
      ].join("\n");
      const runner = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
      const [code, out] = await Promise.all([runner.exited, new Response(runner.stdout).text()]);
      expect(code).toBe(130);
      const { pid, port } = JSON.parse(out) as { pid: number; port: number };
      const dir = join((support as { dir: string }).dir, `cachelab-server-${port}-${runner.pid}`);
      expect(existsSync(dir)).toBe(false);
      let alive = true;
      for (let attempt = 0; alive && attempt < 100; attempt++) {
        alive =
          existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
        if (alive) await Bun.sleep(20);
      }
      expect(alive).toBe(false);
    },
  );

  test("startServer refuses a CPU limit below 0.01 before starting anything", async () => {
    await expect(startServer({ entry: SPINNER, env: {}, cpuLimit: 0.001 })).rejects.toThrow(RangeError);
  });
});

describe("a runner killed too hard to stop its server", () => {
  test("the real server leaves within seconds of the process that started it (CACHELAB_PARENT_PID)", async () => {
    const { testServices } = await import("../shared/testing.ts");
    const { databaseUrl } = await testServices();
    // A stand-in runner: starts server.ts through startServer, says where, then waits to be SIGKILLed.
    const runner = join(work, "runner.ts");
    writeFileSync(
      runner,
      `import { startServer } from ${JSON.stringify(join(import.meta.dir, "server_process.ts"))};
const server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: ${JSON.stringify(databaseUrl)} } });
console.log(JSON.stringify({ pid: server.pid, url: server.url }));
await Bun.sleep(60_000);`,
    );
    const parent = Bun.spawn(["bun", runner], { stdout: "pipe", stderr: "pipe" });
    const reader = parent.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the runner exited: ${await new Response(parent.stderr).text()}`);
      text += new TextDecoder().decode(value);
    }
    const { pid, url } = JSON.parse(text) as { pid: number; url: string };
    expect((await fetch(`${url}/ready`)).status).toBe(200);
    parent.kill("SIGKILL"); // no finally, no exit hook runs
    await parent.exited;
    const alive = () =>
      existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
    const deadline = performance.now() + 5_000;
    while (alive() && performance.now() < deadline) await Bun.sleep(50);
    expect(alive()).toBe(false);
  });
});
