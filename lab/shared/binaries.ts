/**
 * Finding an installed binary (PATH, then Go's install directories) and reading what it prints.
 */
import { homedir } from "node:os";
import { join } from "node:path";

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
