import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { eventually, testDatabaseUrl, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import { compactTrace } from "../lab/trace/trace.ts";
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG, STRATEGY_NAMES } from "../server_config.ts";
import {
  checkPayloadProfile,
  describePayload,
  PAYLOAD_BYTES_MAX,
  sizeProfileFromTrace,
  sizesByKeyOf,
  sizesDigest,
  UNSIZED,
} from "./payload.ts";
import { copyText } from "./product_rows.ts";
import { checkSeed, type SeedPlan } from "./seed.ts";

// Sizes a trace might give: below a row's smallest body, the 200 B … 100 KB, and 1 MiB.
const SIZES = [50, 200, 2_000, 20_000, 100_000, PAYLOAD_BYTES_MAX, 333, 4_096];
const PLAN: SeedPlan = {
  rows: 12,
  seed: 42,
  descriptionBytes: 64,
  payloadBytes: sizeProfileFromTrace(Int32Array.from(SIZES)),
};

describe("payload profiles", () => {
  test("sizeProfileFromTrace digests the sizes, and describePayload records their distribution", () => {
    const profile = sizeProfileFromTrace(Int32Array.from([100, 300, 200]));
    expect(profile).toEqual({
      kind: "per-id",
      sizesByKey: Int32Array.from([100, 300, 200]),
      digest: sizesDigest(Int32Array.from([100, 300, 200])),
    });
    expect(describePayload(profile)).toBe(`per-id n=3 p50=200 p99=300 max=300 sha256=${profile.digest}`);
    expect(describePayload({ kind: "fixed", bytes: 2_000 })).toBe("fixed 2000");
    expect(describePayload(undefined)).toBeNull();
  });

  test("sizeProfileFromTrace and checkPayloadProfile refuse sizes out of range, more sizes than rows, a wrong digest", () => {
    expect(() => sizeProfileFromTrace(Int32Array.from([10, PAYLOAD_BYTES_MAX + 1]))).toThrow(
      "Cannot size a payload: the size of key 1 must be an integer in 1..1048576 bytes (or -1: no size): received 1048577",
    );
    expect(() => sizeProfileFromTrace(new Int32Array(0))).toThrow("received no sizes");
    const profile = sizeProfileFromTrace(Int32Array.from([100, 200]));
    expect(() => checkPayloadProfile(profile, 1)).toThrow("2 sizes for 1 rows");
    expect(() => checkPayloadProfile({ ...profile, digest: "0" }, 2)).toThrow("the digest is not the sizes'");
    expect(() => checkPayloadProfile({ kind: "fixed", bytes: 0 }, 2)).toThrow("payloadBytes.bytes");
  });

  test("a fixed profile sizes every row; a per-id profile each row, ids past it keep descriptionBytes", () => {
    const fixed = copyText({ ...PLAN, payloadBytes: { kind: "fixed", bytes: 1_000 } }, 1, 3);
    const sized = copyText(PLAN, 1, PLAN.rows).trimEnd().split("\n");
    expect(fixed).not.toBe(copyText({ ...PLAN, payloadBytes: undefined }, 1, 3));
    expect(sized[9]?.split("\t")[5]).toHaveLength(64);
    expect(sized[1]?.split("\t")[5]?.length).toBeGreaterThan(0);
  });
});

test("sizesByKeyOf gives each key the last size the trace gave it, −1 where none, and such a row keeps its description", () => {
  const trace = compactTrace([
    { key: "a", op: "read", sizeBytes: 300, tsMs: null },
    { key: "b", op: "read", sizeBytes: null, tsMs: null },
    { key: "a", op: "write", sizeBytes: 500, tsMs: null },
    { key: "c", op: "read", sizeBytes: 1_000, tsMs: null },
  ]);
  const sizes = sizesByKeyOf(trace);
  expect(sizes).toEqual(Int32Array.from([500, UNSIZED, 1_000]));
  expect(sizesByKeyOf(compactTrace([{ key: "a", op: "read", sizeBytes: null, tsMs: null }]))).toBeNull();
  const profile = sizeProfileFromTrace(sizes as Int32Array);
  expect(describePayload(profile)).toBe(
    `per-id n=2 unsized=1 p50=500 p99=1000 max=1000 sha256=${profile.digest}`,
  );
  const [, unsized] = copyText(
    { rows: 3, seed: 42, descriptionBytes: 64, payloadBytes: profile },
    1,
    3,
  ).split("\n");
  expect(unsized?.split("\t")[5]).toHaveLength(64);
  expect(() => sizeProfileFromTrace(Int32Array.from([UNSIZED, UNSIZED]))).toThrow("received no sizes");
  expect(() => sizeProfileFromTrace(Int32Array.from([-2]))).toThrow("(or -1: no size): received -2");
});

describe("sized payloads served", () => {
  let databaseUrl: string;
  let redisUrl: string;
  let sql: postgres.Sql;
  beforeAll(async () => {
    databaseUrl = await testDatabaseUrl(PLAN, "payload_test");
    redisUrl = (await testServices()).redisUrl;
    sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end();
  });

  test("the seed meta records the size distribution, and another profile is another plan", async () => {
    const [meta] = await sql`select payload from cachelab_seed_meta`;
    expect(meta?.payload).toBe(describePayload(PLAN.payloadBytes));
    const other = sizeProfileFromTrace(Int32Array.from(SIZES.map((size) => size - 1)));
    expect(await checkSeed(sql, { ...PLAN, payloadBytes: other })).toMatchObject({ ok: false });
    expect((await checkSeed(sql, PLAN, { deep: true })).ok).toBe(true);
  });

  for (const strategy of STRATEGY_NAMES) {
    test(`${strategy}: each row's body is its size to the byte (the smallest body below it), 1 MiB included, from the database and from the cache`, async () => {
      const lab = createServer({
        ...DEFAULT_CONFIG,
        strategy,
        databaseUrl,
        redisUrl,
        redisKeyPrefix: uniquePrefix(`payload-${strategy}`),
      });
      try {
        expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
        for (const pass of ["miss", "hit"]) {
          for (const [index, size] of SIZES.entries()) {
            const response = await lab.app.handle(new Request(`http://localhost/products/${index + 1}`));
            const body = new Uint8Array(await response.arrayBuffer());
            const parsed = JSON.parse(new TextDecoder().decode(body)) as { id: number; description: string };
            expect({ pass, id: parsed.id, status: response.status }).toEqual({
              pass,
              id: index + 1,
              status: 200,
            });
            // Exact when the size is at least the row's other fields (~150 B); below, the description is empty.
            if (size >= 200) expect({ pass, size, bytes: body.length }).toEqual({ pass, size, bytes: size });
            else {
              expect(parsed.description).toBe("");
              expect(body.length).toBeGreaterThanOrEqual(size);
            }
          }
        }
        const stats = (await (await lab.app.handle(new Request("http://localhost/stats"))).json()) as {
          readDbQueries: number;
        };
        // The caching strategies stored every row, the 1 MiB one too, and answered the second pass from the cache.
        expect(stats.readDbQueries).toBe(strategy === "none" ? 2 * SIZES.length : SIZES.length);
      } finally {
        await lab.close();
      }
    }, 30_000);
  }
});
