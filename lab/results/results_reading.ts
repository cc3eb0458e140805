/**
 * An experiment's hand-written reading (docs/results/<experiment>.reading.md) sits on its generated page and
 * may quote only figures the page itself shows: the test fails on a number the page does not hold, so a
 * reading cannot outlive the run it reads.
 */

/** Thousands separators out ("10 000", "10,000" and "10 000" are 10000), then every number as written. */
export function numbers(text: string): string[] {
  let joined = text;
  for (let previous = ""; previous !== joined; ) {
    previous = joined;
    joined = joined.replace(/(\d)[ ,\u202f\u00a0](\d{3})(?!\d)/g, "$1$2");
  }
  // Names such as p99, L1 or r2 are words, not figures.
  return joined.match(/(?<![A-Za-z_\d.])\d+(?:\.\d+)?/g) ?? [];
}

/** The numbers `reading` quotes that `page` does not show (sign and unit aside), in reading order. */
export function unbackedFigures(reading: string, page: string): string[] {
  const shown = new Set(numbers(page));
  return [...new Set(numbers(reading).filter((figure) => !shown.has(figure)))];
}
