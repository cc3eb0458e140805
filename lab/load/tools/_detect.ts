/**
 * Finding a tool's binary and reading its version, for the tools' `detect()`. Where to look and which
 * version line to trust stay in each tool's module.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import type { Detection } from "./_tool.ts";

export function notInstalled(install: string): Detection {
  return { installed: false, version: null, path: null, install };
}

/** The first `name` on PATH, then in `extraDirs` (in order); null when there is none. */
export function findBinary(name: string, extraDirs: string[]): string | null {
  return Bun.which(name, { PATH: [process.env.PATH ?? "", ...extraDirs].join(":") });
}

/** The stdout of a command that exits 0; null when it fails or cannot start. */
export function commandOutput(argv: string[]): string | null {
  try {
    const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
    return proc.exitCode === 0 ? proc.stdout.toString() : null;
  } catch {
    return null;
  }
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

/** The `go` binary, on PATH or in the official tarball's /usr/local/go/bin; null without Go. */
export function goBinary(): string | null {
  return findBinary("go", ["/usr/local/go/bin"]);
}

/** Where `go install` puts binaries, in Go's order: $GOBIN, each $GOPATH/bin, then the default ~/go/bin. */
export function goBinDirs(go: string | null): string[] {
  const dirs: string[] = [];
  if (process.env.GOBIN) dirs.push(process.env.GOBIN);
  const gopath = go === null ? null : commandOutput([go, "env", "GOPATH"])?.trim();
  if (gopath) dirs.push(...gopath.split(":").flatMap((dir) => (dir ? [join(dir, "bin")] : [])));
  dirs.push(join(homedir(), "go", "bin"));
  return dirs;
}

/** The version of `module` in `go version -m` output (the build info a `go install` binary embeds). */
export function goModuleVersion(buildInfo: string, module: string): string | undefined {
  const escaped = module.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^\\s*mod\\s+${escaped}\\s+v(\\d+\\.\\d+\\.\\d+\\S*)`, "m").exec(buildInfo)?.[1];
}
