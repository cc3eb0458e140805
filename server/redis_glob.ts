/**
 * A literal string as a Redis glob (SCAN MATCH, KEYS): `*`, `?`, `[`, `]` and `\` escaped with a backslash,
 * so REDIS_KEY_PREFIX `app*` matches keys that start with `app*`, not every key starting with `app`.
 */
export function escapeRedisGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}
