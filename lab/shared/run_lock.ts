/**
 * One run at a time. Two runs on the same services corrupt each other (one's reseed truncates the table the
 * other measures, both use one key prefix and channel, a Redis limit is global), so a run holds a lock file
 * in the state folder and a second run refuses at once, naming the first. A lock whose owner is gone (same
 * pid and start time, lab/shared/owner_record.ts) was left by a killed run and is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { currentOwner, type OwnerRecord, ownerRunning } from "./owner_record.ts";
import { REPO_ROOT } from "./repo.ts";

/** The lock every run of this checkout takes: beside services.json, in the lab's state folder. */
export const RUN_LOCK_PATH = join(REPO_ROOT, ".cachelab", "run.lock");

interface LockRecord {
  owner: OwnerRecord;
  /** What holds it: `experiment quickstart`, `seed`. */
  what: string;
  startedAt: string;
}

export interface RunLock {
  /** Removes the lock if it is still this process's. Idempotent. */
  release(): void;
}

/** Takes the lock for `what`, or returns why not (the running one's pid, what it runs and since when). */
export function acquireRunLock(what: string, path = RUN_LOCK_PATH): RunLock | { refusal: string } {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const record: LockRecord = { owner: currentOwner(), what, startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      // wx: O_CREAT|O_EXCL, so of two runs starting at once exactly one creates it.
      writeFileSync(path, `${JSON.stringify(record)}\n`, { flag: "wx", mode: 0o600 });
      const release = () => {
        if (readLock(path)?.owner.pid === process.pid) rmSync(path, { force: true });
        process.off("exit", release);
      };
      process.on("exit", release);
      return { release };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const held = readLock(path);
    if (held !== null && ownerRunning(held.owner)) {
      return {
        refusal: `Cannot start ${what}: another cachelab run holds ${path}: pid ${held.owner.pid}, ${held.what}, since ${held.startedAt}; wait for it to finish or stop it (Ctrl-C), one run at a time`,
      };
    }
    // Left by a run that was killed (or unreadable, a write cut short): take it over.
    rmSync(path, { force: true });
  }
  return { refusal: `Cannot start ${what}: ${path} was taken by another run just now` };
}

function readLock(path: string): LockRecord | null {
  try {
    const record = JSON.parse(readFileSync(path, "utf8")) as LockRecord;
    return Number.isInteger(record.owner?.pid) ? record : null;
  } catch {
    return null;
  }
}
