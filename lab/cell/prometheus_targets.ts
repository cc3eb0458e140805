/**
 * `--prometheus URL`: the cells' servers run with METRICS=1 and are announced to the user's Prometheus
 * through a file_sd targets file (its job reads `file_sd_configs: [{ files: [FILE] }]`, docs/metrics.md),
 * each with the cell's labels. The lab waits for Prometheus to scrape every server before it measures
 * and once more after, so the run's series begin before its first request and end after its last.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { promQuery } from "../services/prometheus.ts";

/** Where the lab tells Prometheus about its servers, and the Prometheus that should scrape them. */
export interface PrometheusLink {
  url: string;
  targetsFile: string;
}

export const DEFAULT_TARGETS_FILE = "results/prometheus_targets.json";

/** The labels a cell's series carry (Prometheus adds `instance` and `job`). */
export interface CellLabels {
  run_id: string;
  experiment: string;
  strategy: string;
  repeat: string;
  cell: string;
}

/**
 * Checks that `url` is a Prometheus that answers (its build info), before any cell starts; the refusal says
 * why, for a usage error.
 */
export async function checkPrometheus(url: string): Promise<string | null> {
  try {
    const response = await fetch(`${url}/api/v1/status/buildinfo`, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { status?: string; data?: { version?: string } };
    if (body.status !== "success") return `${url} answered ${response.status}, not Prometheus's build info`;
    return null;
  } catch (error) {
    return `Cannot reach Prometheus at ${url}: ${(error as Error).message}`;
  }
}

/** Writes the targets file whole (a rename): Prometheus may read it at any moment. */
function writeTargets(file: string, groups: { targets: string[]; labels: Record<string, string> }[]): void {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(groups, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

/** A cell's servers as Prometheus targets: each with the cell's labels and its instance number. */
export function announceCell(link: PrometheusLink, servers: { url: string }[], labels: CellLabels) {
  const targets = servers.map((server) => new URL(server.url).host);
  writeTargets(
    link.targetsFile,
    targets.map((target, i) => ({ targets: [target], labels: { ...labels, instance_index: String(i + 1) } })),
  );
  const selector = `{job=~".+",run_id="${labels.run_id}",cell="${labels.cell}"}`;
  return {
    /**
     * Waits until Prometheus has scraped every server of the cell at or after `afterS` (Unix seconds): the
     * latest of those scrapes' times, or null when that did not happen within `timeoutMs`. A Prometheus that
     * never finds the file is reported, not fatal: the row's figures are the lab's own.
     */
    async scrapedAfter(afterS: number, timeoutMs = 15_000): Promise<number | null> {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        // A failed scrape (a server without /metrics) has a time too: only successful ones count. Not
        // timestamp(up == 1): after an operator Prometheus 2.42 answers the query's time, not the scrape's.
        const expr = `timestamp(up${selector}) and up${selector} == 1`;
        const samples = await promQuery(link.url, expr).catch(() => []);
        const fresh = samples.filter((sample) => sample.value >= afterS);
        if (fresh.length >= targets.length) return Math.max(...fresh.map((sample) => sample.value));
        if (performance.now() > deadline) return null;
        await Bun.sleep(250);
      }
    },
  };
}

/** Takes every server out of the file: Prometheus stops scraping them (their series go stale). */
export function withdrawTargets(link: PrometheusLink): void {
  writeTargets(link.targetsFile, []);
}

export type CellAnnouncement = ReturnType<typeof announceCell>;
