/**
 * Process groups: the lab starts every server and tool detached (its own group leader), so a pipeline or a
 * child it forks can be stopped with it, and Ctrl-C or a guard timeout never leaves an orphan behind.
 */
import type { Subprocess } from "bun";

/** Signals a whole process group (a process started with `detached: true` leads one). */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

/** SIGTERM to the group, then SIGKILL once `graceMs` has passed; the exit code, or null after a signal. */
export async function stopGroup(proc: Subprocess, graceMs: number): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  signalGroup(proc.pid, "SIGTERM");
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]);
  if (!exited) {
    signalGroup(proc.pid, "SIGKILL");
    await proc.exited;
  }
  return proc.exitCode;
}

/**
 * Waits until no process of the group is left, zombies included: a tool's child whose parent (the group
 * leader) was killed is reparented to init, which may reap it a second or two later (observed here).
 * Whether the group went within `timeoutMs`.
 */
export async function waitGroupGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadlineMs = performance.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(-pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ESRCH") return true;
    }
    if (performance.now() >= deadlineMs) return false;
    await Bun.sleep(10);
  }
}
