/**
 * The test suite in two sets: `quick`, what `bun run check` runs (a user's first check, under ten minutes on
 * two cores), and `full`, the long end-to-end runs `bun run check:full` adds (whole experiments through the
 * runner, each strategy pasted alone into an empty project, the OpenAPI fuzzer). Together they are every test
 * file, each once (scripts/test_sets_test.ts). `bun scripts/test_sets.ts quick|full` runs one set.
 */
import { Glob } from "bun";
import { REPO_ROOT } from "../lab/shared/repo.ts";

/** The long end-to-end test files: each runs real servers and load tools for tens of seconds. */
export const FULL_ONLY = [
  "strategies/strategies_test.ts",
  "strategies/valkey_test.ts",
  "server/openapi_test.ts",
  "lab/run/run_cluster_test.ts",
  "lab/run/run_experiment_test.ts",
  "lab/run/run_instances_test.ts",
  "lab/run/run_network_test.ts",
  "lab/run/run_remote_test.ts",
  "lab/run/run_search_test.ts",
  "lab/run/run_settle_test.ts",
  "lab/run/run_staleness_test.ts",
  "lab/run/run_stream_test.ts",
  "lab/run/run_topology_test.ts",
  "lab/run/run_trace_test.ts",
  "lab/run/run_valkey_test.ts",
];

/** Every test file of the repository (bun test's own pattern), sorted, from its root. */
export function testFiles(root = REPO_ROOT): string[] {
  const found = [...new Glob("**/*_test.ts").scanSync({ cwd: root })].filter(
    (path) => !path.split("/").some((part) => part === "node_modules" || part.startsWith(".")),
  );
  return found.sort();
}

/** The files of one set. */
export function testSet(set: "quick" | "full", root = REPO_ROOT): string[] {
  const files = testFiles(root);
  return set === "full"
    ? files.filter((file) => FULL_ONLY.includes(file))
    : files.filter((file) => !FULL_ONLY.includes(file));
}

if (import.meta.main) {
  const [set, ...rest] = process.argv.slice(2);
  if (set !== "quick" && set !== "full") {
    console.error(`Cannot run the tests: expected a set, quick or full: received ${set ?? "nothing"}`);
    process.exit(2);
  }
  const files = testSet(set).map((file) => `./${file}`);
  const proc = Bun.spawn(["bun", "test", "--timeout", "30000", ...rest, ...files], {
    cwd: REPO_ROOT,
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await proc.exited);
}
