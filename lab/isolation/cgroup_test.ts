import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { processUsage } from "../cell/counters.ts";
import { ownerOf } from "../shared/owner_record.ts";
import { CPU_PERIOD_US, cpuLimit } from "./cgroup.ts";
import { detectCpuCgroup, parseCpuList } from "./cgroup_detect.ts";

const support = detectCpuCgroup();
const noCgroup = support.method === "taskset";
if (noCgroup) console.error(`[cgroup_test] cgroup tests skipped: ${support.reason}`);

/** A name no concurrent test process shares. */
function uniqueName(label: string): string {
  return `test-${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/**
 * A bun process spinning on one core until killed, with an idle Worker beside it so it has several threads
 * before the loop starts (a bare `for (;;) {}` runs on one).
 */
const BUSY = [
  'const blob = new Blob(["setInterval(() => {}, 1000)"], { type: "application/javascript" });',
  "new Worker(URL.createObjectURL(blob));",
  "setTimeout(() => { for (;;) {} }, 100);",
].join("\n");

function spawnBusy(argvPrefix: string[] = []): Subprocess {
  return Bun.spawn([...argvPrefix, process.execPath, "-e", BUSY], { stdout: "ignore", stderr: "inherit" });
}

/** Waits until the process runs more than one thread (its Worker has started). */
async function threaded(pid: number): Promise<string[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const threads = readdirSync(`/proc/${pid}/task`);
    if (threads.length > 1) return threads;
    await Bun.sleep(10);
  }
  throw new Error(`process ${pid} never started a second thread`);
}

async function kill(proc: Subprocess): Promise<void> {
  proc.kill("SIGKILL");
  await proc.exited;
}

/** CPU-seconds per wall second the process used over `windowMs`, from /proc/<pid>/stat utime + stime. */
async function cpuRate(pid: number, windowMs = 1_000): Promise<number> {
  const before = processUsage(pid);
  const startedMs = performance.now();
  await Bun.sleep(windowMs);
  const after = processUsage(pid);
  if (before === null || after === null) throw new Error(`process ${pid} is gone`);
  return (after.cpuS - before.cpuS) / ((performance.now() - startedMs) / 1_000);
}

/** The process's cgroup path in the hierarchy holding the cpu controller. */
function cpuCgroupOf(pid: number): string | undefined {
  const lines = readFileSync(`/proc/${pid}/cgroup`, "utf8")
    .trim()
    .split("\n")
    .map((line) => line.split(":"));
  const v1 = lines.find(([, controllers]) => controllers?.split(",").includes("cpu"));
  return (v1 ?? lines.find(([id, controllers]) => id === "0" && controllers === ""))?.[2];
}

function cpusAllowed(pid: number): string | undefined {
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
}

/** Waits for bun's start-up threads, so the measured window holds only the loop. */
const settle = () => Bun.sleep(300);

describe("cpuLimit with a cgroup", () => {
  test.skipIf(noCgroup)("cpuLimit writes a 100 ms period and the quota, and describes them", async () => {
    const limit = cpuLimit(0.5, uniqueName("quota"));
    try {
      expect(limit.method).toBe(support.method);
      const dir = limit.dir as string;
      if (limit.method === "cgroup-v1") {
        expect(readFileSync(join(dir, "cpu.cfs_period_us"), "utf8").trim()).toBe(String(CPU_PERIOD_US));
        expect(readFileSync(join(dir, "cpu.cfs_quota_us"), "utf8").trim()).toBe("50000");
        expect(limit.describe()).toBe("0.5 CPU (cgroup v1 cfs quota 50000/100000)");
      } else {
        expect(readFileSync(join(dir, "cpu.max"), "utf8").trim()).toBe("50000 100000");
      }
      expect(limit.commandPrefix).toEqual([]);
      expect(limit.pids()).toEqual([]);
    } finally {
      await limit.remove();
    }
    expect(existsSync(limit.dir as string)).toBe(false);
    await limit.remove(); // idempotent
  });

  test.skipIf(noCgroup)(
    "a busy loop under a 0.2-CPU limit uses about 0.2 CPU-seconds per second, every thread in the group, and is throttled",
    async () => {
      const limit = cpuLimit(0.2, uniqueName("busy"));
      const busy = spawnBusy();
      try {
        // Moved once it has several threads: cgroup.procs must take them all, not only the main one.
        const threads = (await threaded(busy.pid)).map(Number);
        limit.add(busy.pid);
        expect(cpuCgroupOf(busy.pid)).toBe(limit.cgroupPath as string);
        expect(limit.pids()).toContain(busy.pid);
        const tasks = readFileSync(join(limit.dir as string, "tasks"), "utf8")
          .trim()
          .split("\n")
          .map(Number);
        for (const thread of threads) expect(tasks).toContain(thread);
        await settle();
        const rate = await cpuRate(busy.pid);
        console.error(`[cgroup_test] busy loop under 0.2 CPU: ${rate.toFixed(3)} CPU-s/s`);
        expect(rate).toBeLessThan(0.4);
        expect(rate).toBeGreaterThan(0.05);
        const throttling = limit.throttling();
        console.error(`[cgroup_test] throttling: ${JSON.stringify(throttling)}`);
        expect(throttling?.nrThrottled).toBeGreaterThan(0);
        expect(throttling?.throttledMs).toBeGreaterThan(0);
        // remove() with the process still inside: it goes back to the parent group, the group goes.
        await limit.remove();
        expect(existsSync(limit.dir as string)).toBe(false);
        expect(cpuCgroupOf(busy.pid)).toBe(support.method === "taskset" ? undefined : support.cgroupPath);
      } finally {
        await kill(busy);
        await limit.remove();
      }
    },
  );

  test("the same busy loop without a limit uses most of a core", async () => {
    const busy = spawnBusy();
    try {
      await settle();
      // The best of up to three windows: another process on this machine can take a share of one second.
      const rates: number[] = [];
      while (rates.length < 3 && !rates.some((rate) => rate > 0.7)) rates.push(await cpuRate(busy.pid));
      console.error(
        `[cgroup_test] busy loop without a limit: ${rates.map((rate) => rate.toFixed(3))} CPU-s/s`,
      );
      expect(Math.max(...rates)).toBeGreaterThan(0.7);
    } finally {
      await kill(busy);
    }
  });

  test.skipIf(noCgroup)(
    "cpuLimit removes a killed run's recorded empty group and keeps live, busy and foreign ones",
    async () => {
      if (support.method === "taskset") return;
      /** A group made by a process that runs until killed with SIGKILL (every cleanup skipped). */
      const runGroup = async (label: string) => {
        const script = [
          `import { cpuLimit } from ${JSON.stringify(join(import.meta.dir, "cgroup.ts"))};`,
          `console.log(cpuLimit(0.5, ${JSON.stringify(uniqueName(label))}).dir);`,
          "await Bun.sleep(60_000);",
        ].join("\n");
        const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
        const { value } = await proc.stdout.getReader().read();
        return { proc, dir: new TextDecoder().decode(value).trim() };
      };
      // Both made before either is killed: the second's create would already sweep the first.
      const runs = [await runGroup("stale"), await runGroup("orphan")];
      const [stale, staleBusy] = runs.map((run) => run.dir) as [string, string];
      for (const run of runs) await kill(run.proc);
      expect(ownerOf("cgroup", stale)?.pid).toBe(runs[0]?.proc.pid as number);
      const gone = Bun.spawn(["true"]);
      await gone.exited; // its pid now names an owner that no longer runs
      // Named as the lab names its groups, owner gone, but made by someone else: no record, so kept.
      const foreign = join(support.dir, `cachelab-${uniqueName("foreign")}-${gone.pid}`);
      mkdirSync(foreign);
      const orphan = Bun.spawn(["sleep", "30"]);
      writeFileSync(join(staleBusy, "cgroup.procs"), String(orphan.pid));
      const alive = cpuLimit(1, uniqueName("alive")); // sweeps too: the asserts below hold after both sweeps
      const limit = cpuLimit(1, uniqueName("cleaner"));
      try {
        expect(existsSync(stale)).toBe(false);
        expect(ownerOf("cgroup", stale)).toBeNull(); // its record goes with it
        expect(existsSync(staleBusy)).toBe(true); // an orphan still runs in it: kept
        expect(existsSync(alive.dir ?? "")).toBe(true); // its maker (this process) still runs
        expect(existsSync(foreign)).toBe(true);
      } finally {
        await kill(orphan);
        await limit.remove();
        await alive.remove();
        for (const dir of [stale, staleBusy, foreign]) {
          for (let attempt = 0; existsSync(dir) && attempt < 50; attempt++) {
            try {
              rmdirSync(dir);
            } catch {
              await Bun.sleep(20);
            }
          }
        }
      }
      expect(ownerOf("cgroup", alive.dir ?? "")).toBeNull(); // remove() drops the record
      // The busy group, removed by hand above: the next sweep drops its maker's record.
      await cpuLimit(1, uniqueName("pruner")).remove();
      expect(ownerOf("cgroup", staleBusy)).toBeNull();
    },
  );

  test.skipIf(noCgroup)("a process that exits without removing its group leaves none behind", async () => {
    // process.exit skips every finally (the runner's second Ctrl-C); the module's exit hook removes the group.
    const script = [
      `import { cpuLimit } from ${JSON.stringify(join(import.meta.dir, "cgroup.ts"))};`,
      `const limit = cpuLimit(0.5, ${JSON.stringify(uniqueName("exit"))});`,
      "limit.add(process.pid);",
      "console.log(limit.dir);",
      "process.exit(130);",
    ].join("\n");
    const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
    const [code, out, err] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    expect(err).toBe("");
    expect(code).toBe(130);
    const dir = out.trim();
    expect(dir).toContain(`cachelab-test-exit-`);
    expect(existsSync(dir)).toBe(false);
  });
});

describe("cpuLimit input and the taskset fallback", () => {
  test("cpuLimit refuses less than 0.01 cores and a name that is not a path segment", () => {
    expect(() => cpuLimit(0.005, uniqueName("tiny"))).toThrow(RangeError);
    expect(() => cpuLimit(Number.NaN, uniqueName("nan"))).toThrow(RangeError);
    expect(() => cpuLimit(1, "../escape")).toThrow(TypeError);
  });

  test("the taskset fallback pins a process and every thread to ⌈cores⌉ CPUs", async () => {
    const limit = cpuLimit(0.5, uniqueName("taskset"), { method: "taskset" });
    const own = parseCpuList(cpusAllowed(process.pid) ?? "");
    const first = String(own[0]);
    expect(limit.method).toBe("taskset");
    expect(limit.cpus).toBe(first);
    expect(limit.describe()).toBe(`1 CPU (taskset, whole cores only, asked 0.5; CPU ${first})`);
    expect(limit.fallbackReason).toBe("taskset was asked for");
    expect(limit.throttling()).toBeNull();
    // Started through the prefix: limited from its first instruction.
    const prefixed = spawnBusy(limit.commandPrefix);
    // Moved after the start: `add` pins the threads it already has.
    const moved = spawnBusy();
    try {
      await threaded(moved.pid);
      limit.add(moved.pid);
      await threaded(prefixed.pid);
      for (const proc of [prefixed, moved]) {
        const threads = readdirSync(`/proc/${proc.pid}/task`);
        for (const thread of threads) expect(threadCpusAllowed(proc.pid, thread)).toBe(first);
      }
    } finally {
      await kill(prefixed);
      await kill(moved);
      await limit.remove();
    }
    expect(cpuLimit(2, uniqueName("two"), { method: "taskset" }).describe()).toStartWith("2 CPU (taskset");
    expect(() => cpuLimit(own.length + 1, uniqueName("many"), { method: "taskset" })).toThrow(RangeError);
  });

  test("parseCpuList reads the kernel's list format", () => {
    expect(parseCpuList("0")).toEqual([0]);
    expect(parseCpuList("0-2,5,7-8")).toEqual([0, 1, 2, 5, 7, 8]);
    expect(() => parseCpuList("0-x")).toThrow(TypeError);
  });
});

function threadCpusAllowed(pid: number, thread: string): string | undefined {
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(
    readFileSync(`/proc/${pid}/task/${thread}/status`, "utf8"),
  )?.[1];
}
