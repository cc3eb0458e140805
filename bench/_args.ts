/**
 * The benches' flags, as the lab's commands take theirs: `--help` (or `-h`) prints the usage on stdout and
 * exits 0 before anything starts; an unknown or malformed flag is refused with its reason and the usage, exit 2.
 */
import { availableParallelism } from "node:os";
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";

type Values<T extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: T; strict: true }>
>["values"];

export function benchArgs<const T extends ParseArgsOptionsConfig>(usage: string, options: T): Values<T> {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({
      options: { ...options, help: { type: "boolean", short: "h" } },
      strict: true,
    }));
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\nusage: ${usage}`);
    process.exit(2);
  }
  if (values.help === true) {
    console.log(`usage: ${usage}`);
    process.exit(0);
  }
  return values as Values<T>;
}

/** A flag's value as a positive integer, or exit 2 saying what it received. */
export function positiveInt(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (!(Number.isInteger(value) && value >= 1)) {
    console.error(`--${name} must be a positive integer: received ${raw}`);
    process.exit(2);
  }
  return value;
}

/**
 * `--pin`: what to put before the server's command (CPU 0) and the load tool's (CPU 1), so that on a 2-core VM
 * the scheduler cannot put them together; nothing without it. Exit 2 when asked on a machine of fewer CPUs.
 */
export function pinning(pin: boolean): { server: string[]; tool: string[] } {
  if (!pin) return { server: [], tool: [] };
  if (availableParallelism() < 2) {
    console.error(`--pin needs 2 CPUs: this machine has ${availableParallelism()}`);
    process.exit(2);
  }
  return { server: ["taskset", "-c", "0"], tool: ["taskset", "-c", "1"] };
}
