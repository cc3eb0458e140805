/** Shell words and command lines that bash reads back as exactly the strings they were made from. */

/** `value` in single quotes, each `'` in it as `'\''`: one word, nothing in it expanded. */
function singleQuoted(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A POSIX shell word that stands for exactly `value` (quoted only when it needs to be). */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./=:+-]+$/.test(value) ? value : singleQuoted(value);
}

/**
 * `argv` as one line to paste into bash: run in `cwd` (`cd DIR && …`) with `env` set for it alone
 * (`NAME=value …`), every word quoted as it needs, so the shell hands the program exactly `argv`.
 */
export function shellCommand(
  argv: readonly string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): string {
  const [program, ...args] = argv;
  if (program === undefined) throw new RangeError("Cannot write a command line: no program: received []");
  const env = Object.entries(options.env ?? {}).map(([name, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new RangeError(`Cannot write a command line: not a variable name: received ${name}`);
    return `${name}=${shellQuote(value)}`;
  });
  // An unquoted first word with `=` in it would be read as an assignment, not as the program.
  const words = [
    ...env,
    program.includes("=") ? singleQuoted(program) : shellQuote(program),
    ...args.map(shellQuote),
  ];
  const line = words.join(" ");
  return options.cwd === undefined ? line : `cd ${shellQuote(options.cwd)} && ${line}`;
}
