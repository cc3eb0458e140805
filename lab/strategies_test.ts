/**
 * The strategy contract (strategies/_contract.ts) against this repo's strategies, and against each strategy
 * file copied alone into an empty project that holds only the npm dependencies its header names: a user who
 * copies `strategies/redis.ts` into a service gets a file that type-checks and keeps the contract there,
 * faults included (one Toxiproxy server of this file's own, in front of the real Redis, for every run).
 * The Redis strategies run on each client: ioredis and Bun's RedisClient in the repo; ioredis in the copies,
 * and Bun's client in copies that hold no ioredis at all (what a service on Bun's client installs).
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
strategyContract(
  "repo on Bun's RedisClient",
  { none, local, redis, two_tier: twoTier },
  redisUrl,
  faults,
  "bun",
);

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

/** The packages a strategy loads only when asked (`createRequire(import.meta.url)("ioredis")`), not imports. */
export function loadedOnDemand(source: string): string[] {
  return [...source.matchAll(/createRequire\(import\.meta\.url\)\("([^"]+)"\)/g)].map((m) => m[1] as string);
}

/** The packages a strategy imports (`node:` built-ins aside): what it needs whichever client it runs on. */
function imported(source: string): string[] {
  const specs = [...source.matchAll(/^import .* from "([^"]+)";/gm)].map((m) => m[1] as string);
  return [...new Set(specs.filter((spec) => !spec.startsWith("node:")))];
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
  /** "bun": installed without the packages loaded on demand (ioredis), as a service on Bun's client would. */
  variant: "full" | "bun";
  dir: string;
  install: { exitCode: number | null; output: string };
}

/** Each strategy file alone in an empty project with its dependencies installed (real `bun install`). */
async function copyAlone(name: Copy["name"], variant: Copy["variant"]): Promise<Copy> {
  const dir = mkdtempSync(join(tmpdir(), `cachelab-copy-${variant === "bun" ? "bun-" : ""}${name}-`));
  const file = join(REPO_ROOT, "strategies", `${name}.ts`);
  copyFileSync(file, join(dir, `${name}.ts`));
  const source = readFileSync(file, "utf8");
  const skipped = variant === "bun" ? loadedOnDemand(source) : [];
  const dependencies = Object.fromEntries(
    Object.entries(copyNeeds(source))
      .filter(([dep]) => !skipped.includes(dep))
      .map(([dep, range]) => [dep, pinned(dep, range)]),
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
  return { name, variant, dir, install: { exitCode: await proc.exited, output } };
}

const copies: Copy[] = await Promise.all([
  ...STRATEGIES.map((name) => copyAlone(name, "full")),
  copyAlone("redis", "bun"),
  copyAlone("two_tier", "bun"),
]);

describe("a strategy copied alone", () => {
  test("each header names the dependencies its file imports or loads on demand, and nothing of this repo", () => {
    expect(copyNeeds(readFileSync(join(REPO_ROOT, "strategies", "two_tier.ts"), "utf8"))).toEqual({
      ioredis: "^6",
      "quick-lru": "^7",
    });
    const onDemand: Record<string, string[]> = {};
    for (const name of STRATEGIES) {
      const source = readFileSync(join(REPO_ROOT, "strategies", `${name}.ts`), "utf8");
      onDemand[name] = loadedOnDemand(source);
      expect({ name, packages: [...imported(source), ...loadedOnDemand(source)].sort() }).toEqual({
        name,
        packages: Object.keys(copyNeeds(source)).sort(),
      });
    }
    // ioredis is never imported: a service on Bun's client does without it.
    expect(onDemand).toEqual({ none: [], local: [], redis: ["ioredis"], two_tier: ["ioredis"] });
  });

  for (const copy of copies) {
    const what = copy.variant === "bun" ? "without ioredis (Bun's client)" : "with its dependencies";
    test(`${copy.name}: installs only what it needs ${what} and type-checks there, strict`, async () => {
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
    const local = copies.find((copy) => copy.name === "local" && copy.variant === "full") as Copy;
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

/** The copies of `variant` as modules; the Bun-only run takes none and local from the full copies (unused). */
async function copiedModules(variant: Copy["variant"]): Promise<StrategyModules> {
  const copyOf = (name: Copy["name"]) =>
    (copies.find((copy) => copy.name === name && copy.variant === variant) ??
      copies.find((copy) => copy.name === name && copy.variant === "full")) as Copy;
  const loaded = await Promise.all(
    STRATEGIES.map(async (name) => [name, await import(join(copyOf(name).dir, `${name}.ts`))]),
  );
  return Object.fromEntries(loaded) as StrategyModules;
}
strategyContract("copied alone", await copiedModules("full"), redisUrl, faults);
strategyContract(
  "copied alone without ioredis, on Bun's RedisClient",
  await copiedModules("bun"),
  redisUrl,
  faults,
  "bun",
);
