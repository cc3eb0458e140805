import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import QuickLRU from "quick-lru";
import { seededRandom } from "../plan/targets.ts";
import { QuickLruModel } from "./cache_models.ts";
import { EPOCH_MS } from "./sim_testing.ts";

afterEach(() => {
  setSystemTime();
});

// ---------------------------------------------------------------------------------------------------------
// quick-lru: the model against the real package

type LruOp = { kind: "get" | "load" | "set" | "delete"; key: number; atMs: number };

interface LruTraceOptions {
  seed: number;
  ops: number;
  keyspace: number;
  skewed: boolean;
  /** Largest time step between ops; 0 keeps the clock still. */
  maxStepMs: number;
}

/** Random cache operations: mostly get-then-set-on-miss (`load`, as the strategies do), some raw sets and deletes. */
function lruTrace(options: LruTraceOptions): LruOp[] {
  const random = seededRandom(options.seed);
  const ops: LruOp[] = [];
  let atMs = EPOCH_MS;
  for (let i = 0; i < options.ops; i++) {
    atMs += Math.floor(random() * (options.maxStepMs + 1));
    const u = random();
    const key = Math.floor((options.skewed ? u ** 3 : u) * options.keyspace);
    const pick = random();
    const kind = pick < 0.7 ? "load" : pick < 0.8 ? "get" : pick < 0.9 ? "set" : "delete";
    ops.push({ kind, key, atMs });
  }
  return ops;
}

/** The minimal interface both the real quick-lru (through a clock adapter) and a model offer. */
interface LruSubject {
  get(key: number, nowMs: number): boolean;
  set(key: number, nowMs: number): void;
  delete(key: number): boolean;
}

function realQuickLru(maxSize: number, maxAgeMs?: number): LruSubject {
  const lru = new QuickLRU<number, string>({ maxSize, maxAge: maxAgeMs });
  return {
    get(key, nowMs) {
      setSystemTime(new Date(nowMs));
      return lru.get(key) !== undefined;
    },
    set(key, nowMs) {
      setSystemTime(new Date(nowMs));
      lru.set(key, `v${key}`);
    },
    delete: (key) => lru.delete(key),
  };
}

/** What a strict LRU of maxSize would do: the wrong model test 5 must catch. */
function strictLru(maxSize: number): LruSubject {
  const entries = new Map<number, true>();
  return {
    get(key) {
      if (!entries.has(key)) return false;
      entries.delete(key);
      entries.set(key, true);
      return true;
    },
    set(key) {
      entries.delete(key);
      entries.set(key, true);
      if (entries.size > maxSize) entries.delete(entries.keys().next().value as number);
    },
    delete: (key) => entries.delete(key),
  };
}

/** Per op: "h"/"m" for a lookup, "+"/"-" for delete's answer, "." for a set. */
function replayLru(subject: LruSubject, ops: LruOp[]): string {
  let out = "";
  for (const op of ops) {
    if (op.kind === "get") out += subject.get(op.key, op.atMs) ? "h" : "m";
    else if (op.kind === "load") {
      const hit = subject.get(op.key, op.atMs);
      if (!hit) subject.set(op.key, op.atMs);
      out += hit ? "h" : "m";
    } else if (op.kind === "set") {
      subject.set(op.key, op.atMs);
      out += ".";
    } else out += subject.delete(op.key) ? "+" : "-";
  }
  return out;
}

describe("QuickLruModel", () => {
  const cases: { maxSize: number; keyspace: number; maxAgeMs?: number; maxStepMs: number }[] = [
    { maxSize: 1, keyspace: 3, maxStepMs: 0 },
    { maxSize: 3, keyspace: 8, maxStepMs: 0 },
    { maxSize: 3, keyspace: 8, maxAgeMs: 7, maxStepMs: 2 },
    { maxSize: 7, keyspace: 25, maxStepMs: 0 },
    { maxSize: 7, keyspace: 25, maxAgeMs: 20, maxStepMs: 1 },
    { maxSize: 64, keyspace: 300, maxStepMs: 0 },
    { maxSize: 64, keyspace: 300, maxAgeMs: 150, maxStepMs: 1 },
  ];
  for (const c of cases) {
    for (const skewed of [false, true]) {
      const name = `maxSize ${c.maxSize}, ${skewed ? "skewed" : "uniform"} keys, ${c.maxAgeMs ? `maxAge ${c.maxAgeMs} ms` : "no maxAge"}`;
      test(`QuickLruModel answers every op as quick-lru 7.3.0 does (${name})`, () => {
        for (const seed of [1, 2, 3]) {
          const ops = lruTrace({ seed, ops: 4_000, keyspace: c.keyspace, skewed, maxStepMs: c.maxStepMs });
          const real = replayLru(realQuickLru(c.maxSize, c.maxAgeMs), ops);
          const model = replayLru(
            new QuickLruModel<number>({ maxSize: c.maxSize, maxAgeMs: c.maxAgeMs }),
            ops,
          );
          expect(model).toBe(real);
          expect(real).toContain("h"); // the trace exercises hits, not only misses
        }
      });
    }
  }

  test("QuickLruModel keeps up to 2·maxSize − 1 entries live, and a read can rotate others out", () => {
    // FACTS §12: with maxSize 3, after setting a–e all five are live. Reading a promotes it into the new
    // generation, which fills (d, e, a) and rotates: b and c, still live a moment ago, are gone.
    const keys = [1, 2, 3, 4, 5];
    for (const subject of [realQuickLru(3), new QuickLruModel<number>({ maxSize: 3 })]) {
      for (const key of keys) subject.set(key, EPOCH_MS);
      expect(keys.map((key) => subject.get(key, EPOCH_MS))).toEqual([true, false, false, true, true]);
    }
  });

  test("QuickLruModel expires an entry at exactly maxAge", () => {
    const lru = new QuickLruModel<string>({ maxSize: 10, maxAgeMs: 10 });
    lru.set("a", 100);
    expect(lru.get("a", 109)).toBe(true);
    expect(lru.get("a", 110)).toBe(false);
  });

  test("a strict LRU of maxSize answers differently from quick-lru (the exactness test can fail)", () => {
    const ops = lruTrace({ seed: 1, ops: 4_000, keyspace: 8, skewed: false, maxStepMs: 0 });
    const real = replayLru(realQuickLru(3), ops);
    const wrong = replayLru(strictLru(3), ops);
    const hits = (answers: string) => answers.split("h").length - 1;
    expect(wrong).not.toBe(real);
    expect(hits(wrong)).toBeLessThan(hits(real)); // quick-lru keeps up to 5 live, a strict LRU 3
  });
});
