/** What the commands share to read their arguments: the usage error (exit 2) and number flags. */

/** Thrown for bad command-line input: the command exits 2 with the message and its usage. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A `--flag` value as a positive integer; throws UsageError on anything else. */
export function parsePositiveInt(flag: string, raw: string): number {
  if (!/^[1-9]\d*$/.test(raw))
    throw new UsageError(`Cannot parse --${flag}: expected a positive integer: received ${raw}`);
  return Number(raw);
}
