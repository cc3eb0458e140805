/**
 * A run second by second, from a tool's own per-request records. A request belongs to the second it
 * STARTED in (the instant its latency is measured from), never the second it ended: a slow second's
 * requests would otherwise land in the next one, and a fault would look late by its latency. Percentiles
 * are exact nearest-rank over each second's own latencies, never an average of anything.
 */
import type { LatencyMs, Timeline, TimelineSecond } from "../plan/attack_plan.ts";

/** One request as a tool recorded it. */
export interface RequestRecord {
  /** When it started, Unix epoch ms: the instant its latency is measured from. */
  startMs: number;
  /** null when the tool timed none for it (e.g. autocannon's errors, a request still in flight). */
  latencyMs: number | null;
  /** A 2xx response. */
  ok: boolean;
  /** A transport error or a non-2xx response (neither: still in flight when the run ended). */
  error: boolean;
}

/** No lab run spans a day: a longer span is a wrong time base, not a timeline worth filling second by second. */
const MAX_SPAN_S = 86_400;

interface Bucket {
  sent: number;
  ok: number;
  errors: number;
  latencies: number[];
}

/** The nearest-rank `percent` percentile of ascending `sorted`: the value at rank ⌈percent·n/100⌉. */
export function nearestRank(sorted: ArrayLike<number>, percent: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((percent * sorted.length) / 100));
  return sorted[rank - 1] as number;
}

/** Collects records one at a time (in a tool's single pass over its output), then builds the timeline. */
export class TimelineBuilder {
  readonly #buckets = new Map<number, Bucket>();

  add(record: RequestRecord): void {
    if (!Number.isFinite(record.startMs)) {
      throw new RangeError(
        `Cannot add a request to a timeline: startMs is not a time: received ${record.startMs}`,
      );
    }
    const epochS = Math.floor(record.startMs / 1_000);
    let bucket = this.#buckets.get(epochS);
    if (bucket === undefined) {
      bucket = { sent: 0, ok: 0, errors: 0, latencies: [] };
      this.#buckets.set(epochS, bucket);
    }
    bucket.sent++;
    if (record.ok) bucket.ok++;
    if (record.error) bucket.errors++;
    if (record.latencyMs !== null) {
      if (!(record.latencyMs >= 0)) {
        throw new RangeError(
          `Cannot add a request to a timeline: latencyMs is not a duration: received ${record.latencyMs}`,
        );
      }
      bucket.latencies.push(record.latencyMs);
    }
  }

  /**
   * Every second from the first request's to the last one's, ascending, empty seconds included.
   * `errors: false` when the records cannot tell every error (oha's db has no transport errors): the
   * seconds then say null, and `source` should say why.
   */
  build(options: { source: string; errors: boolean }): Timeline {
    const keys = [...this.#buckets.keys()];
    if (keys.length === 0) return { source: options.source, seconds: [] };
    const first = Math.min(...keys);
    const last = Math.max(...keys);
    if (last - first > MAX_SPAN_S) {
      throw new RangeError(
        `Cannot build a timeline: its requests span ${last - first} s (epoch ${first}..${last}), more than a day`,
      );
    }
    const seconds: TimelineSecond[] = [];
    for (let epochS = first; epochS <= last; epochS++) {
      const bucket = this.#buckets.get(epochS);
      if (bucket === undefined) {
        seconds.push({ epochS, sent: 0, ok: 0, errors: options.errors ? 0 : null, p50Ms: null, p99Ms: null });
        continue;
      }
      const sorted = Float64Array.from(bucket.latencies).sort();
      seconds.push({
        epochS,
        sent: bucket.sent,
        ok: bucket.ok,
        errors: options.errors ? bucket.errors : null,
        p50Ms: nearestRank(sorted, 50),
        p99Ms: nearestRank(sorted, 99),
      });
    }
    return { source: options.source, seconds };
  }
}

/** Records → timeline in one call (see TimelineBuilder). */
export function timelineOf(
  records: Iterable<RequestRecord>,
  options: { source: string; errors: boolean },
): Timeline {
  const builder = new TimelineBuilder();
  for (const record of records) builder.add(record);
  return builder.build(options);
}

/** Σ sent, ok and errors over the seconds (errors null when any second's is). */
export function timelineTotals(timeline: Timeline): { sent: number; ok: number; errors: number | null } {
  let sent = 0;
  let ok = 0;
  let errors: number | null = 0;
  for (const second of timeline.seconds) {
    sent += second.sent;
    ok += second.ok;
    errors = errors === null || second.errors === null ? null : errors + second.errors;
  }
  return { sent, ok, errors };
}

/**
 * What is wrong with a run's timeline, one message each (empty when nothing is): seconds not integer,
 * ascending and contiguous; counts that do not add up; Σ sent other than `sent`; a second outside the
 * wall-clock window [fromMs, toMs] the run was started and ended in.
 */
export function timelineProblems(
  timeline: Timeline,
  expected: { sent: number; fromMs: number; toMs: number },
): string[] {
  const problems: string[] = [];
  const seconds = timeline.seconds;
  seconds.forEach((second, i) => {
    if (!Number.isInteger(second.epochS))
      problems.push(`second ${i}: epochS ${second.epochS} is not an integer`);
    const previous = seconds[i - 1];
    if (previous !== undefined && second.epochS !== previous.epochS + 1) {
      problems.push(`second ${i}: epochS ${second.epochS} does not follow ${previous.epochS}`);
    }
    if (second.ok + (second.errors ?? 0) > second.sent) {
      problems.push(
        `second ${second.epochS}: ok ${second.ok} + errors ${second.errors} > sent ${second.sent}`,
      );
    }
    if ((second.p50Ms === null) !== (second.p99Ms === null) || (second.p50Ms ?? 0) > (second.p99Ms ?? 0)) {
      problems.push(`second ${second.epochS}: p50 ${second.p50Ms} and p99 ${second.p99Ms} disagree`);
    }
  });
  const { sent } = timelineTotals(timeline);
  if (sent !== expected.sent) problems.push(`Σ sent is ${sent}, the run's count ${expected.sent}`);
  const firstS = seconds[0]?.epochS;
  const lastS = seconds[seconds.length - 1]?.epochS;
  const fromS = Math.floor(expected.fromMs / 1_000);
  const toS = Math.floor(expected.toMs / 1_000);
  if (firstS !== undefined && firstS < fromS)
    problems.push(`first second ${firstS} is before the run (${fromS})`);
  if (lastS !== undefined && lastS > toS) problems.push(`last second ${lastS} is after the run (${toS})`);
  return problems;
}

/**
 * Every answered request of several runs pooled (lab/load/distributed.ts, lab/load/k6_operator.ts): the
 * exact nearest-rank figures of the union and its timeline, never anything averaged across the runs.
 */
export class RequestUnion {
  readonly #all: number[] = [];
  readonly #ok: number[] = [];
  readonly #timeline = new TimelineBuilder();
  #sorted = true;

  add(request: { startMs: number; latencyMs: number; ok: boolean }): void {
    this.#all.push(request.latencyMs);
    if (request.ok) this.#ok.push(request.latencyMs);
    this.#timeline.add({ ...request, error: !request.ok });
    this.#sorted = false;
  }

  get count(): number {
    return this.#all.length;
  }

  /** min, mean, p50…p99.9 and max of every latency (null without any). */
  latencyMs(): LatencyMs {
    const all = this.#ascending();
    return {
      min: all[0] ?? null,
      mean: all.length === 0 ? null : all.reduce((a, b) => a + b, 0) / all.length,
      p50: nearestRank(all, 50),
      p90: nearestRank(all, 90),
      p95: nearestRank(all, 95),
      p99: nearestRank(all, 99),
      p99_9: nearestRank(all, 99.9),
      max: all.at(-1) ?? null,
    };
  }

  /** p50 and p99 of the 2xx responses alone. */
  okLatencyMs(): { p50: number | null; p99: number | null } {
    this.#ascending();
    return { p50: nearestRank(this.#ok, 50), p99: nearestRank(this.#ok, 99) };
  }

  timeline(source: string): Timeline {
    return this.#timeline.build({ source, errors: true });
  }

  /** Sorts both lists once (after the last add), and returns every latency, ascending. */
  #ascending(): number[] {
    if (!this.#sorted) {
      this.#all.sort((a, b) => a - b);
      this.#ok.sort((a, b) => a - b);
      this.#sorted = true;
    }
    return this.#all;
  }
}
