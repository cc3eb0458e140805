/** A POSIX shell word that stands for exactly `value` (quoted only when it needs to be). */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./=:+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
