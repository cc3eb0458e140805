/**
 * Reading a tool's raw output. A parse failure throws an Error that names the tool, what could not be read,
 * the exit code and the tool's stderr: it never substitutes 0. How the output is laid out stays in the
 * tool's own module; this file only checks JSON shapes and formats the failure.
 */
import type { ToolName } from "../../plan/attack_plan.ts";
import type { RawOutput } from "../tool.ts";

/** The checks a tool's `parse` runs on its output; every failure names `tool`. */
export interface OutputReader {
  /** The error to throw: `Cannot parse <tool> output: <detail> (exit code N…)` with the tool's stderr. */
  failure(detail: string): Error;
  /** The text of output file `name`; throws when it is missing or blank. */
  file(name: string): string;
  /** `text` parsed as JSON; throws `<what> is not JSON` on a syntax error. */
  json(text: string, what: string): unknown;
  /** `value` as a JSON object (not null, not an array). */
  record(value: unknown, what: string): Record<string, unknown>;
  /** `value` as a non-negative integer. */
  count(value: unknown, what: string): number;
  /** Every entry of the JSON object `value` as a count, e.g. status → responses. */
  counts(value: unknown, what: string): Record<string, number>;
  /** `value` as a finite number, or null where the tool prints null for an empty statistic. */
  numberOrNull(value: unknown, what: string, options: { unit: string }): number | null;
}

export interface OutputReaderOptions {
  /**
   * How a failure quotes stderr: `head`, its first 500 characters inside the parentheses (the default);
   * `tail`, its last 5 lines below the message.
   */
  stderr?: "head" | "tail";
}

export function outputReader(
  tool: ToolName,
  raw: RawOutput,
  options: OutputReaderOptions = {},
): OutputReader {
  const failure = (detail: string): Error => {
    if (options.stderr === "tail") {
      const stderr = raw.stderr.trim().split("\n").slice(-5).join("\n");
      return new Error(
        `Cannot parse ${tool} output: ${detail} (exit code ${raw.exitCode})${stderr ? `:\n${stderr}` : ""}`,
      );
    }
    const stderr = raw.stderr.trim().slice(0, 500);
    return new Error(
      `Cannot parse ${tool} output: ${detail} (exit code ${raw.exitCode}${stderr ? `; stderr: ${stderr}` : ""})`,
    );
  };
  const record = (value: unknown, what: string): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw failure(`${what} is not an object`);
    }
    return value as Record<string, unknown>;
  };
  const count = (value: unknown, what: string): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
      throw failure(`${what} is not a count: received ${JSON.stringify(value)}`);
    }
    return value;
  };
  return {
    failure,
    record,
    count,
    file(name) {
      const text = raw.outputs[name];
      if (text === undefined || text.trim() === "") throw failure(`${name} is missing or empty`);
      return text;
    },
    json(text, what) {
      try {
        return JSON.parse(text);
      } catch (error) {
        if (error instanceof SyntaxError) throw failure(`${what} is not JSON: ${error.message}`);
        throw error;
      }
    },
    counts(value, what) {
      const result: Record<string, number> = {};
      for (const [key, n] of Object.entries(record(value, what))) result[key] = count(n, `${what}.${key}`);
      return result;
    },
    numberOrNull(value, what, { unit }) {
      if (value === null) return null;
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw failure(`${what} is not a number of ${unit}: received ${JSON.stringify(value)}`);
      }
      return value;
    },
  };
}

export function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** Responses with a 2xx status, from status → count. */
export function okCount(statusCounts: Record<string, number>): number {
  return sum(Object.entries(statusCounts).flatMap(([status, n]) => (/^2\d\d$/.test(status) ? [n] : [])));
}
