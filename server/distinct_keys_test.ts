import { expect, test } from "bun:test";
import { DISTINCT_KEYS_EXACT_MAX, DistinctKeys } from "./distinct_keys.ts";

test("DistinctKeys counts exactly up to its bound, ids and list pages apart", () => {
  const keys = new DistinctKeys();
  for (let i = 1; i <= 100_000; i++) {
    keys.add(i);
    keys.add(i);
  }
  keys.add("3:0:20");
  keys.add("3:0:20");
  expect({ size: keys.size, exact: keys.exact }).toEqual({ size: 100_001, exact: true });
});

test("DistinctKeys holds 16 384 registers, not a million keys, and estimates within 3%", () => {
  const keys = new DistinctKeys();
  for (let i = 0; i < 1_000_000; i++) keys.add(`${i % 50}:${i}:20`);
  expect(keys.exact).toBe(false);
  expect(keys.heldEntries).toBe(16_384);
  expect(keys.heldEntries).toBeLessThan(DISTINCT_KEYS_EXACT_MAX);
  expect(Math.abs(keys.size / 1_000_000 - 1)).toBeLessThan(0.03);
});

test("DistinctKeys keeps counting the keys it saw before the switch, and repeats do not count", () => {
  const keys = new DistinctKeys(1_000);
  for (let i = 0; i < 5_000; i++) keys.add(i);
  for (let i = 0; i < 5_000; i++) keys.add(i);
  expect(keys.exact).toBe(false);
  expect(Math.abs(keys.size / 5_000 - 1)).toBeLessThan(0.03);
});

test("DistinctKeys counts ids as bits and the rest in a set: 0, 2^20 − 1, 2^20, negatives and fractions apart", () => {
  const keys = new DistinctKeys(10);
  for (const key of [0, 31, 32, 2 ** 20 - 1, 2 ** 20, 2 ** 31 - 1, -1, 1.5, "1", 0, 2 ** 20, "1"])
    keys.add(key);
  expect({ size: keys.size, exact: keys.exact, held: keys.heldEntries }).toEqual({
    size: 9,
    exact: true,
    held: 9,
  });
  keys.add(7);
  keys.add(8); // the 11th distinct key: past the bound of 10, estimated from every key seen, bits included
  expect(keys.exact).toBe(false);
  expect(keys.size).toBe(11);
});
