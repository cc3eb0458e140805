import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processStartTicks } from "./owner_record.ts";
import { acquireRunLock, RUN_LOCK_PATH } from "./run_lock.ts";
import { testTmpdir } from "./test_tmpdir.ts";

const lockPath = () => join(mkdtempSync(join(testTmpdir(), "cachelab-lock-")), "run.lock");

test("a second run refuses while the first holds the lock, naming its pid and what it runs", () => {
  const path = lockPath();
  const first = acquireRunLock("experiment quickstart", path);
  if ("refusal" in first) throw new Error(first.refusal);
  const second = acquireRunLock("experiment read_heavy", path);
  expect(second).toEqual({
    refusal: expect.stringMatching(
      new RegExp(
        `^Cannot start experiment read_heavy: another cachelab run holds .*: pid ${process.pid}, experiment quickstart, since `,
      ),
    ),
  });
  first.release();
  const third = acquireRunLock("experiment read_heavy", path);
  expect("release" in third).toBe(true);
  if ("release" in third) third.release();
  expect(existsSync(path)).toBe(false);
});

test("a lock left by a killed run (or by a reused pid) is taken over", async () => {
  const path = lockPath();
  const proc = Bun.spawn(["sleep", "5"]);
  const owner = { pid: proc.pid, startTicks: processStartTicks(proc.pid) };
  proc.kill("SIGKILL");
  await proc.exited;
  writeFileSync(path, JSON.stringify({ owner, what: "experiment killed", startedAt: "then" }));
  const taken = acquireRunLock("experiment quickstart", path);
  expect("release" in taken).toBe(true);
  expect(JSON.parse(readFileSync(path, "utf8")).owner.pid).toBe(process.pid);
  if ("release" in taken) taken.release();
  // This process's pid with another start time: the pid was reused, the owner is gone.
  writeFileSync(
    path,
    JSON.stringify({ owner: { pid: process.pid, startTicks: 1 }, what: "x", startedAt: "then" }),
  );
  const again = acquireRunLock("experiment quickstart", path);
  expect("release" in again).toBe(true);
  if ("release" in again) again.release();
});

test("bun run experiment and bun run seed exit 2 at once while another run holds the lock", async () => {
  // The holder is another process, as a second terminal's run would be.
  const holder = Bun.spawn(
    [
      "bun",
      "-e",
      `const l = (await import("${import.meta.dir}/run_lock.ts")).acquireRunLock("experiment holder"); if ("refusal" in l) { console.log(l.refusal); process.exit(3); } console.log("held"); await Bun.sleep(60000);`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  try {
    const reader = holder.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.trim()).toBe("held");
    for (const argv of [
      ["bun", "lab/cli/experiment.ts", "quickstart", "--out", "/tmp/cachelab-locked.csv"],
      ["bun", "seed/seed.ts"],
    ]) {
      const startedMs = performance.now();
      const proc = Bun.spawn(argv, { cwd: `${import.meta.dir}/../..`, stdout: "pipe", stderr: "pipe" });
      const stderr = await new Response(proc.stderr).text();
      expect({ argv, code: await proc.exited }).toEqual({ argv, code: 2 });
      expect(stderr).toContain(
        `another cachelab run holds ${RUN_LOCK_PATH}: pid ${holder.pid}, experiment holder`,
      );
      expect(performance.now() - startedMs).toBeLessThan(15_000); // at once: before services or tools
    }
  } finally {
    holder.kill("SIGKILL");
    await holder.exited;
  }
  expect(existsSync(RUN_LOCK_PATH)).toBe(true); // a SIGKILLed holder leaves its lock: the next run takes it over
  const next = acquireRunLock("experiment next");
  expect("release" in next).toBe(true);
  if ("release" in next) next.release();
}, 60_000);
