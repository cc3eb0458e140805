/** bench/_js_profile.ts on a real profile: Bun's `--cpu-prof` of a script that builds Responses and reads quick-lru. */
import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";
import { type CpuProfile, JS_GROUPS, jsGroup, jsShares } from "./_js_profile.ts";

test("a real profile's samples fall into their groups, shares summing to 1", () => {
  const dir = mkdtempSync(join(testTmpdir(), "cachelab-js-profile-"));
  try {
    const script = join(dir, "work.ts");
    writeFileSync(
      script,
      `import QuickLRU from ${JSON.stringify(Bun.resolveSync("quick-lru", import.meta.dir))};
const lru = new QuickLRU({ maxSize: 100, maxAge: 60_000 });
for (let i = 0; i < 100; i++) lru.set("k" + i, "v");
const headers = new Headers({ "content-type": "application/json" });
const until = performance.now() + 400;
let n = 0;
while (performance.now() < until) { lru.get("k" + (n++ % 100)); new Response("{}", { headers }); }
`,
    );
    const run = Bun.spawnSync(["bun", "--cpu-prof", `--cpu-prof-dir=${dir}`, script], { stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile")) as string;
    const shares = jsShares(JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile);
    expect(shares.Response).toBeGreaterThan(0);
    expect(shares.strategy).toBeGreaterThan(0); // quick-lru's get
    expect(JS_GROUPS.reduce((sum, group) => sum + shares[group], 0)).toBeCloseTo(1, 10);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("frames are told by where they live", () => {
  expect(jsGroup("Response", "")).toBe("Response");
  expect(jsGroup("writeBuffered", "")).toBe("driver");
  expect(jsGroup("anonymous", "[native code]")).toBe("native");
  expect(jsGroup("map", "file:///r/node_modules/elysia/dist/adapter/bun/handler.mjs")).toBe("Elysia");
  expect(jsGroup("get", "file:///r/node_modules/quick-lru/index.js")).toBe("strategy");
  expect(jsGroup("getOrLoad", "file:///r/strategies/local.ts")).toBe("strategy");
  expect(jsGroup("execute", "file:///r/node_modules/postgres/src/connection.js")).toBe("driver");
  expect(jsGroup("getProduct", "file:///r/server.ts")).toBe("handler");
});
