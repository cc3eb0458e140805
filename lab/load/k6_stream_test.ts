/**
 * The k6-operator export's generated stream under real k6: the script's targets are the lab's own stream
 * positions (its first 10^5, and each execution segment's), and the ConfigMap holds the script alone, small
 * at any rate and duration.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { planFromArgs } from "../cli/attack_args.ts";
import type { AttackPlan } from "../plan/attack_plan.ts";
import { generateTargets, TargetStream } from "../plan/targets.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { CONFIG_MAP_LIMIT_BYTES, exportK6Operator } from "./k6_operator.ts";
import { streamRefusal } from "./k6_stream.ts";
import { findTool } from "./run_attack.ts";
import { testPlan } from "./tools/tool_testing.ts";

/** The brief's command, exported: `bun run attack --export k6-operator …` with these flags. */
function exportPlan(flags: string[]): AttackPlan {
  const url = ["--url", "http://cachelab.example:3000/products/{id}", "--keys", "zipf:1.1"];
  return planFromArgs([...url, "--keyspace", "100000", "--export", "k6-operator", ...flags]).plan;
}

/** Runs real k6 on `file` in `dir` (a missing k6 fails the test) and returns what its console.log wrote. */
async function k6Console(dir: string, file: string, args: string[] = []): Promise<string> {
  const detection = await (await findTool("k6")).detect();
  if (!detection.installed) throw new Error(`k6 is not installed: ${detection.install}`);
  const out = join(dir, `${file}.${args.join("_").replace(/[^a-z0-9]/gi, "")}.log`);
  const proc = Bun.spawn(
    [
      detection.path ?? "k6",
      "run",
      "--quiet",
      "--no-summary",
      "--no-usage-report",
      "--address",
      "",
      "--log-format",
      "raw",
      "--console-output",
      out,
      ...args,
      file,
    ],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  const code = await proc.exited;
  expect(code, await new Response(proc.stderr).text()).toBe(0);
  return readFileSync(out, "utf8");
}

describe("k6 operator export with a generated stream", () => {
  test("the ConfigMap holds the script alone, under 1 MiB, for 500 rps × 10 s and for 100 000 rps × 10 min", async () => {
    const small = exportPlan(["--rate", "500", "--duration", "10s", "--parallelism", "4"]);
    // --targets defaults to what the plan sends plus 1%, never a fixed 100 000.
    expect(small.targetCount).toBe(5_000 + 50 + 16);
    const big = exportPlan([
      ...["--rate", "100000", "--duration", "10m", "--max-connections", "4000", "--parallelism", "40"],
    ]);
    expect(big.targetCount).toBe(60_000_000 + 600_000 + 16);
    for (const [plan, parallelism] of [
      [small, 4],
      [big, 40],
    ] as const) {
      const exported = await exportK6Operator(plan, { parallelism, name: "cachelab" });
      expect(exported.generated).toBe(true);
      expect(Object.keys(exported.files).sort()).toEqual(["configmap.yaml", "script.js", "testrun.yaml"]);
      const configMap = Bun.YAML.parse(exported.files["configmap.yaml"] as string) as {
        data: Record<string, string>;
      };
      expect(Object.keys(configMap.data)).toEqual(["script.js"]);
      expect(exported.dataBytes).toBe(Buffer.byteLength(configMap.data["script.js"] as string));
      expect(exported.dataBytes).toBeLessThan(CONFIG_MAP_LIMIT_BYTES);
      console.log(
        `${plan.durationS} s at ${JSON.stringify(plan.model)}: ConfigMap data ${exported.dataBytes} bytes`,
      );
    }
    // The same script whatever the size, apart from the numbers in it.
    const [a, b] = await Promise.all(
      [small, big].map(
        async (plan) => (await exportK6Operator(plan, { parallelism: 4, name: "x" })).dataBytes,
      ),
    );
    expect(Math.abs((a as number) - (b as number))).toBeLessThan(200);
  });

  test("under k6 the script's first 100 000 targets are the lab stream's first 100 000", async () => {
    const plan = exportPlan(["--rate", "100000", "--duration", "10m", "--max-connections", "4000"]);
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-k6-stream-"));
    const exported = await exportK6Operator(plan, { parallelism: 40, name: "keys" });
    writeFileSync(join(dir, "script.js"), exported.files["script.js"] as string);
    // One iteration walks the script's own targetAt, the function its default function sends from.
    writeFileSync(
      join(dir, "keys.js"),
      `import { targetAt } from "./script.js";
export const options = { scenarios: { keys: { executor: "shared-iterations", vus: 1, iterations: 1 } } };
export default function () {
  const keys = [];
  let urls = 0;
  for (let i = 0; i < 100000; i++) {
    const target = targetAt(i);
    keys.push(target.key);
    if (target.url === "http://cachelab.example:3000/products/" + target.key) urls++;
  }
  console.log("KEYS " + JSON.stringify(keys) + " URLS " + urls);
}
`,
    );
    const printed = await k6Console(dir, "keys.js");
    const match = /KEYS (\[[\d,]*\]) URLS (\d+)/.exec(printed);
    expect(match, printed.slice(0, 500)).not.toBeNull();
    const keys = JSON.parse(match?.[1] ?? "[]") as number[];
    const lab = generateTargets(plan, 100_000).map((target) => target.key);
    expect(keys).toHaveLength(100_000);
    const differing = keys.findIndex((key, i) => key !== lab[i]);
    expect(differing).toBe(-1);
    expect(Number(match?.[2])).toBe(100_000);
    // A Zipf stream, not a constant: its hottest key is about 1/H(100000, 1.1) ≈ 9% of the draws.
    expect(new Set(keys).size).toBeGreaterThan(10_000);
    // A fixed walk of 10^5 positions in goja: about 5 s on an idle 2-core machine, bun's default timeout.
  }, 60_000);

  test("each of 4 execution segments sends the lab's keys at the positions k6 gives it, together all of them once", async () => {
    const plan = testPlan(
      { kind: "open", rateRps: 400 },
      {
        name: "segments",
        requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
        keys: {
          distribution: { kind: "hotspot", hotFraction: 0.1, hotShare: 0.9 },
          keyspace: 1_000,
          seed: 9,
        },
        durationS: 1,
        maxConnections: 8,
        targetCount: 10_000,
      },
    );
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-k6-segments-"));
    const exported = await exportK6Operator(plan, { parallelism: 4, name: "segments" });
    writeFileSync(join(dir, "script.js"), exported.files["script.js"] as string);
    // The script's own VUs and its scenario's count (rate × duration), run by iterations rather than by the
    // clock: how many a constant-arrival-rate segment starts depends on how fast k6 ran (88 of 100 seen on a
    // busy machine), while k6 splits a count between segments exactly. Each iteration prints what it would send.
    writeFileSync(
      join(dir, "segment.js"),
      `import exec from "k6/execution";
import { options as exported, targetAt } from "./script.js";
const main = exported.scenarios.main;
if (main.executor !== "constant-arrival-rate" || main.timeUnit !== "1s" || !/^\\d+ms$/.test(main.duration)) {
  throw new Error("not a constant-arrival-rate scenario in ms: " + JSON.stringify(main));
}
export const options = {
  scenarios: {
    main: {
      executor: "shared-iterations",
      vus: main.maxVUs,
      iterations: (main.rate * parseInt(main.duration, 10)) / 1000,
    },
  },
};
export default function () {
  const position = exec.scenario.iterationInTest;
  console.log("P " + position + " " + targetAt(position).url);
}
`,
    );
    const printed = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        k6Console(dir, "segment.js", [
          `--execution-segment=${i - 1}/4:${i}/4`,
          "--execution-segment-sequence=0,1/4,2/4,3/4,1",
        ]),
      ),
    );
    const lab = new TargetStream(plan);
    const all: number[] = [];
    for (const text of printed) {
      const sent = [...text.matchAll(/P (\d+) (http[^\s"]+)/g)].map((m) => ({
        position: Number(m[1]),
        url: m[2],
      }));
      // A quarter of 400 × 1 s: a segment without a VU, or a scenario with another rate, sends another count.
      expect(sent.length).toBe(100);
      for (const { position, url } of sent) {
        expect(url).toBe(lab.at(position).url);
        all.push(position);
      }
    }
    all.sort((x, y) => x - y);
    // Every position of the run, each sent exactly once.
    expect(all).toEqual(Array.from({ length: 400 }, (_, i) => i));
  });

  test("a trace or a mix that cannot seek is not generated, and says why", () => {
    const mix = testPlan(
      { kind: "open", rateRps: 10 },
      {
        name: "mix",
        requests: [
          { name: "detail", weight: 1, method: "GET", path: "/products/{id}" },
          { name: "health", weight: 1, method: "GET", path: "/health" },
        ],
      },
    );
    expect(streamRefusal(mix)).toContain("differ in {id}");
    const trace = { ...mix, keys: { ...mix.keys, distribution: { kind: "trace" as const, file: "t.csv" } } };
    expect(streamRefusal(trace)).toContain("trace t.csv cannot be generated from a seed");
  });
});
