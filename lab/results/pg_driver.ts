/**
 * The Postgres driver as a row names it: its version, and the patch `bun install` applies to it, read from what
 * this checkout installs (node_modules, package.json).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";

function packageVersion(root: string, name: string): string {
  return (
    JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as {
      version: string;
    }
  ).version;
}

/** The patch `bun install` applies to a dependency at its version (package.json's patchedDependencies), or null. */
function patchOf(root: string, name: string, version: string): string | null {
  const { patchedDependencies = {} } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    patchedDependencies?: Record<string, string>;
  };
  return patchedDependencies[`${name}@${version}`] ?? null;
}

/**
 * The driver as the row names it, with its version and the lab's patch of it: `postgres.js 3.4.9 +
 * patches/postgres@3.4.9.patch (…)`, `Bun.SQL (bun 1.4.4, …)`. Rows from before the patch name none.
 */
export function pgDriverDescription(driver: string, root = REPO_ROOT): string {
  if (driver === "postgres-js") {
    const version = packageVersion(root, "postgres");
    const patch = patchOf(root, "postgres", version);
    return `postgres.js ${version}${patch ? ` + ${patch}` : ""} (drizzle named prepared statements)`;
  }
  if (driver === "bun-sql") return `Bun.SQL (bun ${Bun.version}, prepare=true; drizzle bun-sql)`;
  return driver;
}
