/**
 * Deletes a Redis glob's keys through any client's `send`: SCAN + UNLINK, never KEYS or FLUSHALL, so a
 * reset neither blocks Redis nor touches another application's keys.
 */

/** How many keys matching `pattern` went. */
export async function deleteKeys(
  send: (command: string, args: string[]) => Promise<unknown>,
  pattern: string,
): Promise<number> {
  let cursor = "0";
  let removed = 0;
  do {
    const [next, keys] = (await send("SCAN", [cursor, "MATCH", pattern, "COUNT", "1000"])) as [
      string,
      string[],
    ];
    cursor = String(next);
    if (keys.length > 0) removed += Number(await send("UNLINK", keys));
  } while (cursor !== "0");
  return removed;
}
