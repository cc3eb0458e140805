/** What the commands share: help, the usage error (exit 2), number flags, and Ctrl-C as an abort signal. */

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

/** A `--flag` value as a positive integer; throws UsageError on anything else. */
export function parsePositiveInt(flag: string, raw: string): number {
  if (!/^[1-9]\d*$/.test(raw))
    throw new UsageError(`Cannot parse --${flag}: expected a positive integer: received ${raw}`);
  return Number(raw);
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
