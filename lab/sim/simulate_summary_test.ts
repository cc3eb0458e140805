import { expect, test } from "bun:test";
import { settingsFor } from "./sim_testing.ts";
import { fromTargets, type SimRequest, simulate } from "./simulate.ts";

test("fromTargets reads a summary URL, and a summary is an entry of its own that a write of its product deletes", () => {
  const [summary, detail] = fromTargets(
    [
      { method: "GET", url: "http://h:1/products/7/summary" },
      { method: "GET", url: "http://h:1/products/7" },
    ],
    [0, 1],
  );
  expect(summary).toEqual({ op: "summary", id: 7, atMs: 0 });
  expect(detail).toEqual({ op: "detail", id: 7, atMs: 1 });
  expect(() => fromTargets([{ method: "PUT", url: "http://h:1/products/7/summary" }], [0])).toThrow(
    "Cannot simulate: PUT of a product summary",
  );
  const measured: SimRequest[] = [
    { op: "detail", id: 7, atMs: 0 },
    { op: "summary", id: 7, atMs: 1 }, // not the detail's entry: a load
    { op: "summary", id: 7, atMs: 2 },
    { op: "write", id: 7, atMs: 3 },
    { op: "summary", id: 7, atMs: 4 }, // deleted by the write: a load
  ];
  expect(simulate([], measured, settingsFor("local"))).toMatchObject({
    reads: 4,
    readDbQueries: 3,
    distinctKeys: 2,
  });
});
