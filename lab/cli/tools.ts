/**
 * `bun run tools`: which load tools are installed, their exact versions, what each can run faithfully, and
 * the install command for each missing one.
 */
import { loadTools } from "../load/run_attack.ts";
import type { Capabilities, Detection, Tool } from "../load/tool.ts";
import { asksForHelp, exitWith, refuseUsage } from "./args.ts";

const USAGE = `usage: bun run tools

  Which load tools are installed (oha, vegeta, k6, wrk, autocannon), their exact versions, what each can run
  faithfully, and the install command for each missing one. It takes no options; docs/load_tools.md.

  -h, --help  this text`;

/** Markdown-style table rows for the tools (used by this command and kept in docs/load_tools.md). */
export function toolsTable(rows: { tool: Tool; detection: Detection }[]): string {
  const header = [
    "tool",
    "version",
    "models",
    "mixed methods",
    "latency fields",
    "resolution ms",
    "status counts",
    "walks its list",
    "per-second timeline",
    "notes",
  ];
  const lines = [header, header.map(() => "---")];
  for (const { tool, detection } of rows) {
    const c: Capabilities = tool.capabilities;
    lines.push([
      tool.name,
      detection.installed ? (detection.version ?? "?") : `missing: ${detection.install}`,
      c.models.join(", "),
      c.mixedMethods ? "yes" : "no",
      c.percentiles.join(" "),
      String(c.latencyResolutionMs),
      c.statusCounts ? "yes" : "no",
      c.sends,
      c.timeline ? "yes" : "no",
      c.notes,
    ]);
  }
  return lines.map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

export async function main(args: string[] = []): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  if (args.length > 0) {
    return refuseUsage(
      "tools",
      `Cannot run bun run tools: it takes no arguments: received ${args.join(" ")}`,
    );
  }
  const tools = await loadTools();
  const rows = await Promise.all(tools.map(async (tool) => ({ tool, detection: await tool.detect() })));
  console.log(toolsTable(rows));
  const installed = rows.filter((row) => row.detection.installed);
  console.log(
    `\n${installed.length} of ${rows.length} installed; default tool: ${installed[0]?.tool.name ?? "none (run bun install)"}`,
  );
  for (const { tool, detection } of rows) {
    if (detection.installed) console.log(`${tool.name}: ${detection.path}`);
  }
  return 0;
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
