/**
 * The strategy contract (strategies/_contract.ts) against this repo's strategies, and against each strategy
 * file copied alone into an empty project that holds only the npm dependencies its header names: a user who
 * copies `strategies/redis.ts` into a service gets a file that type-checks and keeps the contract there,
 * faults included (one Toxiproxy server of this file's own, in front of the real Redis, for both runs).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FaultProxies, type StrategyModules, strategyContract } from "../strategies/_contract.ts";
import * as local from "../strategies/local.ts";
import * as none from "../strategies/none.ts";
import * as redis from "../strategies/redis.ts";
import * as twoTier from "../strategies/two_tier.ts";
import { startToxiproxy, type ToxiproxyServer } from "./faults/toxiproxy.ts";
import { REPO_ROOT } from "./shared/repo.ts";
import { testServices } from "./shared/testing.ts";

const redisUrl = async () => (await testServices()).redisUrl;
let toxiproxy: Promise<ToxiproxyServer> | undefined;
/** Started on the first fault test, once for both runs. */
async function faults(): Promise<FaultProxies> {
  toxiproxy ??= startToxiproxy();
  return (await toxiproxy).client;
}
afterAll(async () => {
  await (await toxiproxy)?.stop();
});

strategyContract("repo", { none, local, redis, two_tier: twoTier }, redisUrl, faults);

const STRATEGIES = ["none", "local", "redis", "two_tier"] as const;
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The npm packages a strategy's header says a copy needs ("Copying this file? Needs ioredis@^6 …"). */
export function copyNeeds(source: string): Record<string, string> {
  const line = /Copying this file\? (.*)/.exec(source)?.[1] ?? "";
  return Object.fromEntries(
    [...line.matchAll(/([a-z@][\w./-]*)@(\^?\d+(?:\.\d+)*)/g)].map((m) => [m[1], m[2]]),
  );
}

/** The repo's pinned version of `name`, checked against the header's range (^major). */
function pinned(name: string, range: string): string {
  const version = manifest.dependencies[name];
  if (version === undefined) throw new RangeError(`Cannot copy: ${name} is not a dependency of this repo`);
  if (range.startsWith("^") && version.split(".")[0] !== range.slice(1).split(".")[0]) {
    throw new RangeError(
      `Cannot copy: the header asks for ${name}@${range}: received ${version} in package.json`,
    );
  }
  return version;
}

interface Copy {
  name: (typeof STRATEGIES)[number];
  dir: string;
  install: { exitCode: number | null; output: string };
}

/** Each strategy file alone in an empty project with its dependencies installed (real `bun install`). */
const copies: Copy[] = await Promise.all(
  STRATEGIES.map(async (name) => {
    const dir = mkdtempSync(join(tmpdir(), `cachelab-copy-${name}-`));
    const file = join(REPO_ROOT, "strategies", `${name}.ts`);
    copyFileSync(file, join(dir, `${name}.ts`));
    const needs = copyNeeds(readFileSync(file, "utf8"));
    const dependencies = Object.fromEntries(
      Object.entries(needs).map(([dep, range]) => [dep, pinned(dep, range)]),
    );
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({
        name: `copy-of-${name.replace("_", "-")}`,
        private: true,
        type: "module",
        dependencies,
        devDependencies: { "@types/bun": manifest.devDependencies["@types/bun"] },
      }),
    );
    const tsconfig = JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.json"), "utf8")) as object;
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["*.ts"] }));
    const proc = Bun.spawn(["bun", "install", "--no-save"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const output = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
    return { name, dir, install: { exitCode: await proc.exited, output } };
  }),
);

describe("a strategy copied alone", () => {
  test("each header names the dependencies its file imports, and nothing of this repo", () => {
    expect(copyNeeds(readFileSync(join(REPO_ROOT, "strategies", "two_tier.ts"), "utf8"))).toEqual({
      ioredis: "^6",
      "quick-lru": "^7",
    });
    for (const name of STRATEGIES) {
      const source = readFileSync(join(REPO_ROOT, "strategies", `${name}.ts`), "utf8");
      const imports = [...source.matchAll(/^import .* from "([^"]+)";/gm)].map((m) => m[1] as string);
      const packages = imports.filter((spec) => !spec.startsWith("node:"));
      expect({ name, packages: [...new Set(packages)].sort() }).toEqual({
        name,
        packages: Object.keys(copyNeeds(source)).sort(),
      });
    }
  });

  for (const copy of copies) {
    test(`${copy.name}: installs only its dependencies and type-checks there, strict`, async () => {
      expect({ install: copy.install.exitCode, output: copy.install.output }).toMatchObject({ install: 0 });
      const tsc = Bun.spawn([join(REPO_ROOT, "node_modules", ".bin", "tsc"), "--noEmit", "-p", copy.dir], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const output = await new Response(tsc.stdout).text();
      expect({ exitCode: await tsc.exited, output }).toEqual({ exitCode: 0, output: "" });
    });
  }
});

describe("the copy check", () => {
  test("a strategy that imports a file of this repo does not type-check alone", async () => {
    const local = copies.find((copy) => copy.name === "local") as Copy;
    const dir = mkdtempSync(join(tmpdir(), "cachelab-copy-leaky-"));
    const source = readFileSync(join(REPO_ROOT, "strategies", "local.ts"), "utf8");
    writeFileSync(
      join(dir, "local.ts"),
      `import type { CacheStrategy } from "./_strategy.ts";\n${source}\nexport type Checked = CacheStrategy;\n`,
    );
    writeFileSync(join(dir, "tsconfig.json"), readFileSync(join(local.dir, "tsconfig.json")));
    symlinkSync(join(local.dir, "node_modules"), join(dir, "node_modules"));
    const tsc = Bun.spawn([join(REPO_ROOT, "node_modules", ".bin", "tsc"), "--noEmit", "-p", dir], {
      stdout: "pipe",
    });
    const output = await new Response(tsc.stdout).text();
    expect(await tsc.exited).not.toBe(0);
    expect(output).toContain("./_strategy.ts");
  });
});

const copied = Object.fromEntries(
  await Promise.all(copies.map(async (copy) => [copy.name, await import(join(copy.dir, `${copy.name}.ts`))])),
) as StrategyModules;
strategyContract("copied alone", copied, redisUrl, faults);
