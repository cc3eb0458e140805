/**
 * postgres.js 3.4.9 as patched here (patches/postgres@3.4.9.patch). Its pool moves connections between queues;
 * a queue's array kept a slot for every connection shifted out until a shift emptied it, which the busy queue
 * rarely does, and `remove` searched every slot from the start: each query cost more than the one before
 * (docs/benchmarks.md, ratio A). Counted, not timed: the slots `indexOf` searches, and the heap a queue keeps.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dirname, join } from "node:path";
import postgres from "postgres";
import { testServices } from "../lab/shared/testing.ts";

type Queue<T> = { readonly length: number; push(x: T): T; shift(): T; remove(x: T): T | null };
const { default: Queue } = (await import(
  join(dirname(Bun.resolveSync("postgres", import.meta.dir)), "queue.js")
)) as {
  default: <T>() => Queue<T>;
};

/** Runs `work` and returns the most slots any array `indexOf` searched meanwhile (the pool's `remove` is one). */
async function longestSearched(work: () => unknown): Promise<number> {
  const indexOf = Array.prototype.indexOf;
  let longest = 0;
  Array.prototype.indexOf = function (this: unknown[], ...args: Parameters<typeof indexOf>) {
    longest = Math.max(longest, this.length - Math.max(0, args[1] ?? 0));
    return indexOf.apply(this, args);
  };
  try {
    await work();
  } finally {
    Array.prototype.indexOf = indexOf;
  }
  return longest;
}

describe("the pool's queue", () => {
  test("searches only what it holds, and keeps no slot for what it shifted, used as the pool uses its busy queue", async () => {
    const queue = Queue<string>();
    // Two connections busy; the first is taken for a query, the second moves on (to open or full).
    const cycle = () => {
      queue.push("a");
      queue.push("b");
      if (queue.shift() !== "a" || queue.remove("b") !== "b") throw new Error("out of order");
    };
    const longest = await longestSearched(() => {
      for (let i = 0; i < 20_000; i++) cycle();
    });
    expect(longest).toBeLessThan(4);
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) cycle();
    Bun.gc(true);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(2_000_000);
    expect(queue.length).toBe(0);
  });

  test("keeps its array bounded while it never empties, and still finds what it holds", async () => {
    const queue = Queue<number>();
    queue.push(0);
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed;
    for (let i = 1; i <= 1_000_000; i++) {
      queue.push(i);
      if (queue.shift() !== i - 1) throw new Error(`shifted out of order at ${i}`);
    }
    Bun.gc(true);
    // Unpatched, the array kept a slot (8 bytes) for each of the million shifted.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(2_000_000);
    const longest = await longestSearched(() => expect(queue.remove(1_000_000)).toBe(1_000_000));
    expect(longest).toBeLessThan(4);
    expect(queue.remove(999_999)).toBeNull(); // shifted: gone
    expect(queue.length).toBe(0);
  });
});

describe("a real pool", () => {
  let sql: postgres.Sql;
  beforeAll(async () => {
    sql = postgres((await testServices()).databaseUrl, { max: 4, onnotice: () => {} });
  });
  afterAll(() => sql.end());

  test("searches no longer a queue after 4 000 pipelined queries than after the first few", async () => {
    let next = 0;
    const longest = await longestSearched(() =>
      Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next++ < 4_000) await sql`select ${next}::int as n`;
        }),
      ),
    );
    // Unpatched, the busy queue's array held a slot for most queries sent: thousands here.
    expect(longest).toBeLessThan(256);
  });
});
