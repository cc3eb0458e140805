/**
 * Finding a tool's binary and reading its version, for the tools' `detect()`. Where to look and which
 * version line to trust stay in each tool's module.
 */

import { findBinary } from "../../shared/binaries.ts";
import type { Detection } from "../tool.ts";

export function notInstalled(install: string): Detection {
  return { installed: false, version: null, path: null, install };
}

export interface VersionFlagOptions {
  /** Searched after PATH. */
  extraDirs: string[];
  /** The flag that makes the binary print its version, e.g. `--version`. */
  flag: string;
  /** Captures the version (group 1) from what the flag prints, stdout then stderr. */
  version: RegExp;
  install: string;
}

/**
 * A binary that prints its version for a flag (on stdout or stderr, whatever its exit code). Throws when
 * it is installed but prints no version it can read: an unnamed version would go into every CSV row.
 */
export function detectByVersionFlag(name: string, options: VersionFlagOptions): Detection {
  const path = findBinary(name, options.extraDirs);
  if (path === null) return notInstalled(options.install);
  const proc = Bun.spawnSync([path, options.flag], { stdout: "pipe", stderr: "pipe" });
  const printed = `${proc.stdout.toString()}${proc.stderr.toString()}`.trim();
  const version = options.version.exec(printed)?.[1];
  if (version === undefined) {
    throw new Error(
      `Cannot read ${name}'s version: \`${path} ${options.flag}\` printed: received ${printed || "nothing"}`,
    );
  }
  return { installed: true, version, path, install: options.install };
}
