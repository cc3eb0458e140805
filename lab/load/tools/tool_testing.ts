/**
 * What the tool tests share: small plans, captured output, the real server on a seeded test database with
 * its request counter, and what that server answers each target. Not a test file itself (no `_test`).
 */
import { expect } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { startServer } from "../../cell/server_process.ts";
import type {
  AttackPlan,
  LoadModel,
  NormalizedResult,
  RequestTemplate,
  Target,
  Timeline,
  ToolName,
} from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { testTmpdir } from "../../shared/test_tmpdir.ts";
import { testDatabaseUrl } from "../../shared/testing.ts";
import { timelineProblems } from "../request_timeline.ts";
import { runTool, type ToolRun } from "../run_attack.ts";
import type { Detection, RawOutput, RunContext, Tool } from "../tool.ts";

/** Rows in the test database. Plans draw ids from 1..2 200, so about one in eleven answers 404. */
export const ROWS = 2_000;

export const DETAIL = { name: "detail", weight: 9, method: "GET", path: "/products/{id}" } as const;
/** A valid stock update: it answers 200 (404 past ROWS) and changes the row. */
export const STOCK = {
  name: "stock",
  weight: 1,
  method: "PUT",
  path: "/products/{id}",
  body: '{"stock":{n}}',
  vars: { n: { min: 0, max: 999 } },
} as const;
/** The PUT body names no updatable field, so it answers 400 and never changes the seeded rows. */
export const GET_AND_BAD_PUT: RequestTemplate[] = [
  { name: "get", weight: 9, method: "GET", path: "/products/{id}" },
  { name: "bad-put", weight: 1, method: "PUT", path: "/products/{id}", body: '{"bogus": {id}}' },
];

/** The text of a captured output in testdata/. */
export function testdata(file: string): string {
  return readFileSync(join(import.meta.dir, "testdata", file), "utf8");
}

/**
 * A captured run: `<prefix>.context.json` (what the tool printed, its exit code and the RunContext it ran
 * in; its `captured` field says against what) and the output file `<prefix>.<output>`.
 */
export function capturedRun(prefix: string, output: string): { raw: RawOutput; context: RunContext } {
  const capture = JSON.parse(testdata(`${prefix}.context.json`));
  return {
    raw: {
      stdout: capture.stdout,
      stderr: capture.stderr,
      exitCode: capture.exitCode,
      outputs: { [output]: testdata(`${prefix}.${output}`) },
    },
    context: capture.context,
  };
}

/** `raw` with its JSON output file `file` changed by `edit`. */
export function editedJson<T>(
  raw: RawOutput,
  { file, edit }: { file: string; edit: (json: T) => void },
): RawOutput {
  const json = JSON.parse(raw.outputs[file] as string) as T;
  edit(json);
  return { ...raw, outputs: { ...raw.outputs, [file]: JSON.stringify(json) } };
}

/** A small plan of detail reads named `name`, from testPlan: what a tool's own tests start from. */
export function detailPlan(name: string, model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, { name, ...SMALL_PLAN, requests: [{ ...DETAIL, weight: 1 }], ...overrides });
}

/** A 2 s plan against 127.0.0.1:3000, uniform keys over 1..2 200 (seed 5, 2 000 targets), 5 s timeout. */
export function testPlan(
  model: LoadModel,
  overrides: Partial<AttackPlan> & Pick<AttackPlan, "name" | "requests">,
): AttackPlan {
  return {
    baseUrl: "http://127.0.0.1:3000",
    model,
    durationS: 2,
    warmupS: 0,
    timeoutS: 5,
    headers: { accept: "application/json" },
    keys: { distribution: { kind: "uniform" }, keyspace: 2_200, seed: 5 },
    targetCount: 2_000,
    maxConnections: 50,
    ...overrides,
  };
}

/** What the k6 and autocannon tests change in testPlan: no headers, a 2 s timeout, 1 000 targets from seed 7. */
export const SMALL_PLAN = {
  timeoutS: 2,
  headers: {},
  keys: { distribution: { kind: "uniform" }, keyspace: 2_200, seed: 7 },
  targetCount: 1_000,
} satisfies Partial<AttackPlan>;

/** The targets an in-order replay sent first: `count` of them, wrapping around the list. */
export function replayed(targets: Target[], count: number): Target[] {
  return Array.from({ length: count }, (_, i) => targets[i % targets.length] as Target);
}

/** How many targets ask for an id past the seeded rows (answered 404). */
export function notFound(targets: Target[]): number {
  return targets.filter((target) => (target.key as number) > ROWS).length;
}

/** What the server answers a target of GET_AND_BAD_PUT: 400 for the PUT, 404 past the rows, else 200. */
export function expectedStatus(target: Target): string {
  return target.method === "PUT" ? "400" : (target.key as number) > ROWS ? "404" : "200";
}

/** The statuses the server answers the first `sent` targets of an in-order replay of GET_AND_BAD_PUT. */
export function expectedStatuses(targets: Target[], sent: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const target of replayed(targets, sent)) {
    const status = expectedStatus(target);
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

export interface SavedProduct {
  id: number;
  stock: number;
  version: number;
  updated_at: string;
}

export interface TestServer {
  url: string;
  /** A temporary directory for the tools' run directories; stop() removes it. */
  workDir: string;
  /** The server's request counter (GET /stats). */
  requestCount(): Promise<number>;
  /**
   * Runs `plan` with `tool` once and counts the requests the server answered meanwhile; `fromMs`..`toMs`
   * (epoch ms) is the wall-clock window the run was started and ended in.
   */
  run(
    tool: Tool,
    plan: AttackPlan,
    options: { label: string; durationS: number; detection: Detection; targets?: Target[] },
  ): Promise<{ run: ToolRun; targets: Target[]; served: number; fromMs: number; toMs: number }>;
  /**
   * Runs `body`, then puts back every seeded row a PUT of `targets` may have changed, so the seed check
   * of other tests still matches and nobody reseeds. `saved` holds the rows as they were.
   */
  restoringPutRows<T>(
    targets: Target[],
    body: (sql: postgres.Sql, saved: SavedProduct[]) => Promise<T>,
  ): Promise<T>;
  stop(): Promise<void>;
}

/**
 * A real run's timeline holds exactly `sent` requests in contiguous seconds inside the run's wall-clock
 * window (see timelineProblems), and is not empty.
 */
export function expectTimeline(
  result: NormalizedResult,
  expected: { sent: number; fromMs: number; toMs: number },
): Timeline {
  const timeline = result.timeline;
  expect(timeline, `${result.tool} gave no timeline`).not.toBeNull();
  expect(timelineProblems(timeline as Timeline, expected)).toEqual([]);
  expect(expected.sent).toBeGreaterThan(0);
  return timeline as Timeline;
}

/** The real server (local strategy) on the seeded test database, with a work directory named for the tool. */
export async function startTestServer(toolName: ToolName): Promise<TestServer> {
  const databaseUrl = await testDatabaseUrl({ rows: ROWS, seed: 7, descriptionBytes: 64 });
  const server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
  let workDir: string;
  try {
    workDir = mkdtempSync(join(testTmpdir(), `cachelab-${toolName}-test-`));
  } catch (error) {
    await server.stop();
    throw error;
  }
  const requestCount = async (): Promise<number> => {
    const stats = (await (await fetch(`${server.url}/stats`)).json()) as { requests: number };
    return stats.requests;
  };
  return {
    url: server.url,
    workDir,
    requestCount,
    async run(tool, plan, options) {
      const targets = options.targets ?? generateTargets(plan);
      const before = await requestCount();
      const fromMs = Date.now();
      const run = await runTool(tool, plan, { ...options, targets, workDir });
      const toMs = Date.now();
      return { run, targets, served: (await requestCount()) - before, fromMs, toMs };
    },
    async restoringPutRows(targets, body) {
      const ids = [
        ...new Set(
          targets.flatMap((t) => (t.method === "PUT" && (t.key as number) <= ROWS ? [t.key as number] : [])),
        ),
      ];
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      const saved = await sql<SavedProduct[]>`
        select id, stock, version, updated_at::text from products where id in ${sql(ids)}`;
      try {
        return await body(sql, saved);
      } finally {
        await sql.begin(async (tx) => {
          for (const row of saved) {
            await tx`update products set stock = ${row.stock}, version = ${row.version},
              updated_at = ${row.updated_at}::timestamptz where id = ${row.id}`;
          }
        });
        await sql.end();
      }
    },
    async stop() {
      await server.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}
