/** What the commands share: help, the usage error (exit 2), number flags, and Ctrl-C as an abort signal. */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { type ParseArgsConfig, parseArgs } from "node:util";

/** Thrown for bad command-line input: the command exits 2 with the message and its usage. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Whether the command line asks for help: `--help` or `-h` anywhere before a `--`. Checked before anything
 * else, so help never starts, reads or refuses anything. (A flag's value cannot be `-h`: parseArgs refuses
 * a value that looks like an option unless given as `--flag=-h`, which is one argument.)
 */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

/** What a usage error prints: its one-line message and where the usage is, nothing more (it would bury it). */
export function usageLine(command: string, message: string): string {
  return `${message}\nsee \`bun run ${command} --help\``;
}

/** Prints a usage error (usageLine) and returns its exit code, 2. */
export function refuseUsage(command: string, message: string): 2 {
  console.error(usageLine(command, message));
  return 2;
}

/** Why `path` cannot be read as a text input (missing, a folder, empty, binary), or null when it can. */
export function inputFileProblem(path: string): string | null {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    return "no such file";
  }
  if (stat.isDirectory()) return "it is a folder, not a file";
  if (!stat.isFile()) return "it is not a regular file";
  if (stat.size === 0) return "it is empty";
  const head = Buffer.alloc(Math.min(8_192, stat.size));
  const fd = openSync(path, "r");
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  return head.includes(0) ? "it is not text (a NUL byte in its first 8 KiB)" : null;
}

/** A `--flag` value as a positive integer up to `max`; throws UsageError, saying what is allowed, on anything else. */
export function parsePositiveInt(flag: string, raw: string, max = 10_000_000): number {
  if (!/^[1-9]\d*$/.test(raw) || Number(raw) > max)
    throw new UsageError(`Cannot parse --${flag}: expected a positive integer up to ${max}: received ${raw}`);
  return Number(raw);
}

/**
 * node:util's parseArgs with errors a user can act on, as UsageError: `--flag -1` is read as `--flag=-1` (a
 * negative number is a value, which the flag's own parser then refuses saying what is allowed, instead of
 * parseArgs's "argument is ambiguous"), and an unknown option says so in one line.
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const takesValue = new Set(
    Object.entries(config.options ?? {}).flatMap(([name, option]) =>
      option.type === "string" ? [`--${name}`] : [],
    ),
  );
  const given = config.args ?? [];
  const args: string[] = [];
  for (let i = 0; i < given.length; i++) {
    const arg = given[i] as string;
    const next = given[i + 1];
    if (arg === "--") {
      args.push(...given.slice(i));
      break;
    }
    if (takesValue.has(arg) && next !== undefined && /^-(\d|\.\d|Infinity)/.test(next)) {
      args.push(`${arg}=${next}`);
      i++;
    } else args.push(arg);
  }
  try {
    return parseArgs({ ...config, args }) as ReturnType<typeof parseArgs<T>>;
  } catch (error) {
    const { code, message } = error as Error & { code?: string };
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const option = /'([^']+)'/.exec(message)?.[1] ?? "an option";
      throw new UsageError(`Cannot use ${option}: no such option`);
    }
    throw new UsageError(message.split("\n")[0] as string);
  }
}

/**
 * Runs a command's `main` and exits with its code. What escapes it is a failure of the lab, not of the
 * input: exit 1 with its reason (the message; the stack too with CACHELAB_DEBUG=1). A UsageError that
 * escapes exits 2 with its message.
 */
export async function exitWith(main: () => Promise<number> | number): Promise<never> {
  let code: number;
  try {
    code = await main();
  } catch (error) {
    code = error instanceof UsageError ? 2 : 1;
    const debug = process.env.CACHELAB_DEBUG === "1";
    console.error(
      error instanceof Error ? (debug ? (error.stack ?? error.message) : reason(error)) : String(error),
    );
  }
  process.exit(code);
}

/** An error's message, then its causes' ("…: caused by …"): the reason without the stack. */
function reason(error: Error): string {
  const cause = error.cause;
  return cause instanceof Error ? `${error.message}: caused by ${reason(cause)}` : error.message;
}

/**
 * SIGINT and SIGTERM as an AbortSignal: the first says `what` happens next and aborts (the command stops
 * its tool and server and returns 130), a second leaves at once. `dispose` removes the handlers.
 */
export function abortOnSignals(what: string): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  const handlers = (["SIGINT", "SIGTERM"] as const).map((name) => {
    const handler = () => {
      if (abort.signal.aborted) process.exit(130);
      console.error(`\n${name}: ${what}`);
      abort.abort();
    };
    process.on(name, handler);
    return [name, handler] as const;
  });
  return {
    signal: abort.signal,
    dispose: () => {
      for (const [name, handler] of handlers) process.off(name, handler);
    },
  };
}
