/**
 * The repo's shape, checked: what issue 20 made true and a later change could quietly undo. No lab file (tests
 * included) over 400 lines, no two lab files with one name, no import cycle (type-only and `import("…")` too), server.ts a file a reader sees in a
 * sitting that imports nothing of the lab, and nothing of the lab importing server.ts.
 *
 *   bun scripts/layout.ts        # prints each problem, exits 1 if there is one
 */
import { readFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";

export const LAB_FILE_MAX_LINES = 400;
export const SERVER_MAX_LINES = 250;

/**
 * A file's relative imports, as absolute paths: static ones, type-only ones (a reader follows them the same
 * way) and `import("…")` of a literal path (loaded on demand, still a dependency both ways).
 */
function importsOf(file: string, source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms))
    found.push(resolve(dirname(file), match[1] as string));
  for (const match of source.matchAll(/\bimport\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g))
    found.push(resolve(dirname(file), match[1] as string));
  return found;
}

/** Each import cycle among `files`, as `a.ts → b.ts` (paths relative to `root`). */
function cycles(root: string, sources: Map<string, string>): string[] {
  const graph = new Map([...sources].map(([file, source]) => [file, importsOf(file, source)]));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const found = new Set<string>();
  function visit(file: string): void {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") {
        found.add(
          stack
            .slice(stack.indexOf(next))
            .map((f) => relative(root, f))
            .join(" → "),
        );
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return [...found];
}

/** What is wrong with the layout of the TypeScript files `paths` (relative to `root`); empty when nothing. */
export function layoutProblems(root: string, paths: string[]): string[] {
  const problems: string[] = [];
  const sources = new Map(paths.map((path) => [join(root, path), readFileSync(join(root, path), "utf8")]));
  const lines = (path: string) => (sources.get(join(root, path)) ?? "").split("\n").length - 1;
  const lab = paths.filter((path) => path.startsWith("lab/"));
  for (const path of lab) {
    if (lines(path) > LAB_FILE_MAX_LINES)
      problems.push(`${path} has ${lines(path)} lines: a lab file holds at most ${LAB_FILE_MAX_LINES}`);
  }
  const byName = Map.groupBy(lab, (path) => basename(path));
  for (const [name, same] of byName) {
    if (same.length > 1) problems.push(`${same.length} lab files are named ${name}: ${same.join(", ")}`);
  }
  for (const cycle of cycles(root, sources)) problems.push(`import cycle: ${cycle}`);
  if (paths.includes("server.ts")) {
    if (lines("server.ts") > SERVER_MAX_LINES)
      problems.push(`server.ts has ${lines("server.ts")} lines: the product reads in ${SERVER_MAX_LINES}`);
    const server = join(root, "server.ts");
    for (const target of importsOf(server, sources.get(server) ?? "")) {
      if (relative(root, target).startsWith("lab/"))
        problems.push(`server.ts imports ${relative(root, target)}: the product imports nothing of the lab`);
    }
  }
  for (const path of lab) {
    const file = join(root, path);
    if (importsOf(file, sources.get(file) ?? "").includes(join(root, "server.ts")))
      problems.push(`${path} imports server.ts: the lab reads the server through server/`);
  }
  return problems;
}

/** The TypeScript files git tracks under `root`, relative to it. */
export function trackedTypeScript(root: string): string[] {
  const listed = Bun.spawnSync(["git", "ls-files", "*.ts"], { cwd: root, stdout: "pipe" });
  return listed.stdout.toString().trim().split("\n");
}

if (import.meta.main) {
  const root = resolve(import.meta.dir, "..");
  const problems = layoutProblems(root, trackedTypeScript(root));
  for (const problem of problems) console.error(problem);
  process.exit(problems.length === 0 ? 0 : 1);
}
