/**
 * The docs hold together: every relative link in the README, the changelog and docs/ names a file that
 * exists (and a heading in it, for `#anchor`), every generated part (the README's experiment list, the
 * tables of results, …) is what its source gives, the README stays a guide (at most 180 lines, no prose
 * line over 160 characters) whose quick start holds the commands CI runs, and nothing a user reads points
 * at what only the project's authors can see (see INTERNAL_REFERENCES).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { COLUMNS } from "../lab/results/csv.ts";
import { COLUMN_MEANINGS } from "../lab/results/csv_columns.ts";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import {
  columnMeaningProblems,
  columnTable,
  experimentList,
  GENERATED_PARTS,
  normalized,
  resultsTable,
  withBlock,
  withParts,
} from "./docs.ts";

const pages = [
  "README.md",
  "CHANGELOG.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/**
 * What a reader of the README, docs/, a strategy file (pasted into users' services) or an experiment file
 * (copied as a template) cannot follow: the
 * project's issue numbers, its internal reference notes (FACTS and their sections), the users' write-ups by
 * their seed numbers, and its own names for questions. Say what is meant instead. CHANGELOG.md is history,
 * told by the issue each version answered: there "Issue N" names a version and is allowed; the rest is not.
 */
export const INTERNAL_REFERENCES: { name: string; pattern: RegExp; inChangelog: boolean }[] = [
  { name: "an issue number", pattern: /\bissues? #?\d+/i, inChangelog: true },
  { name: "a reference to an issue", pattern: /\bthe issue(?:'s)?\b/i, inChangelog: true },
  { name: "the reference notes", pattern: /\bFACTS\b|§\s?\d/, inChangelog: false },
  { name: "a write-up by its seed number", pattern: /\bseeds? 0\d\d\b/i, inChangelog: false },
  { name: "an internal name for a question", pattern: /\bthe cloud question\b/i, inChangelog: false },
];

/** The internal references in `text` (the file `file`), one line each: `file:line: what: the line`. */
export function internalReferences(file: string, text: string): string[] {
  const changelog = file === "CHANGELOG.md";
  return text
    .split("\n")
    .flatMap((line, i) =>
      INTERNAL_REFERENCES.filter(
        ({ pattern, inChangelog }) => !(changelog && inChangelog) && pattern.test(line),
      ).map(({ name }) => `${file}:${i + 1}: ${name}: ${line.trim()}`),
    );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N}\- ]/gu, "")
    .replaceAll(" ", "-");
}

function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of text.matchAll(/^#{1,6} (.+)$/gm)) anchors.add(slug(match[1] as string));
  return anchors;
}

/** The relative links of a Markdown text outside code blocks: [text](target). */
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] as string)
    .filter((target) => !/^[a-z]+:/.test(target));
}

/** What is wrong with the links of `page` (repo-relative), as readable lines. */
export function brokenLinks(page: string, read = (path: string) => readFileSync(path, "utf8")): string[] {
  const path = join(REPO_ROOT, page);
  const text = read(path);
  const broken: string[] = [];
  for (const link of linksOf(text)) {
    const [file = "", anchor] = link.split("#");
    const target = file === "" ? path : resolve(dirname(path), file);
    if (!existsSync(target)) {
      broken.push(`${page}: ${link}: no such file`);
      continue;
    }
    if (anchor !== undefined && target.endsWith(".md") && !anchorsOf(read(target)).has(anchor)) {
      broken.push(`${page}: ${link}: no heading #${anchor}`);
    }
  }
  return broken;
}

describe("the docs", () => {
  test("every relative link resolves, to a file and to a heading in it", () => {
    expect(pages.flatMap((page) => brokenLinks(page))).toEqual([]);
  });

  test("a broken link and a missing heading are found", () => {
    const fake = (text: string) => (path: string) =>
      path.endsWith("README.md") ? text : readFileSync(path, "utf8");
    expect(brokenLinks("README.md", fake("[x](docs/nowhere.md)"))).toEqual([
      "README.md: docs/nowhere.md: no such file",
    ]);
    expect(brokenLinks("README.md", fake("[x](docs/seed.md#no-such-heading)"))).toEqual([
      "README.md: docs/seed.md#no-such-heading: no heading #no-such-heading",
    ]);
    expect(brokenLinks("README.md", fake("`[x](docs/nowhere.md)` and [y](docs/seed.md)"))).toEqual([]);
  });

  test("the README's experiment list is the one the experiment files give", async () => {
    const text = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(normalized(withBlock(text, "experiments", await experimentList()))).toBe(normalized(text));
    expect(() => withBlock("no markers", "experiments", "")).toThrow(/has no <!-- experiments:start -->/);
  });

  test("every generated part of every page is what its source gives", async () => {
    for (const page of new Set(GENERATED_PARTS.map((part) => part.page))) {
      const text = readFileSync(join(REPO_ROOT, page), "utf8");
      expect({ page, text: normalized(await withParts(page, text)) }).toEqual({
        page,
        text: normalized(text),
      });
    }
    // A figure edited by hand in a generated table of results is put back from the CSV.
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const edited = readme.replace(/^\| local +\| 0\.28 /m, "| local | 0.31 ");
    expect(edited).not.toBe(readme);
    expect(normalized(await withParts("README.md", edited))).toBe(normalized(readme));
  });

  test("docs/results.md lists every experiment with what its committed reference CSV holds", async () => {
    const text = readFileSync(join(REPO_ROOT, "docs", "results.md"), "utf8");
    const table = await resultsTable();
    expect(normalized(withBlock(text, "results", table))).toBe(normalized(text));
    expect(table).toContain("| [read_heavy](results/read_heavy.md) |");
  });

  test("every CSV column has exactly one meaning, and docs/csv.md's table is generated from them", () => {
    expect(columnMeaningProblems(COLUMNS, COLUMN_MEANINGS)).toEqual([]);
    const text = readFileSync(join(REPO_ROOT, "docs", "csv.md"), "utf8");
    expect(normalized(withBlock(text, "columns", columnTable()))).toBe(normalized(text));
  });

  test("a column without a meaning, with two, an empty meaning and an unknown one are found", () => {
    const meanings = [
      { columns: ["a", "b"], meaning: "the a and the b" },
      { columns: ["b", "zz"], meaning: " " },
    ];
    expect(columnMeaningProblems(["a", "b", "c"], meanings)).toEqual([
      "b, zz: an empty meaning",
      "b: 2 meanings",
      "c: no meaning",
      "zz: not a column",
    ]);
  });

  test("the README's quick start is a bare machine's order, with the test command CI runs", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const quickStart = readme.slice(
      readme.indexOf("## Quick start"),
      readme.indexOf("\n## ", readme.indexOf("## Quick start") + 1),
    );
    const commands = [
      "bash scripts/install-deps.sh",
      "bun install && bun run experiment quickstart",
      "bun run check",
    ];
    const at = commands.map((command) => quickStart.indexOf(`\n${command} `));
    expect(at.every((position) => position > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    const ci = readFileSync(join(REPO_ROOT, ".ci", "run"), "utf8");
    expect(ci).toMatch(/^bash scripts\/install-deps\.sh$/m);
    expect(ci).toMatch(/^bun run check$/m);
  });

  test("no page a user reads refers to the project's issues, notes or write-ups by internal names", () => {
    const files = [
      ...pages,
      // The strategies are pasted into users' services, the experiments copied as templates.
      ...["strategies", "experiments"].flatMap((dir) =>
        readdirSync(join(REPO_ROOT, dir))
          .filter((name) => name.endsWith(".ts"))
          .map((name) => `${dir}/${name}`),
      ),
    ];
    const found = files.flatMap((file) =>
      internalReferences(file, readFileSync(join(REPO_ROOT, file), "utf8")),
    );
    expect(found).toEqual([]);
  });

  test("an internal reference is found, and the changelog may name the issue a version answered", () => {
    const text = "As issue 21 asks (FACTS §14),\nthe cloud question, seeds 001 and 004, issue #7.";
    expect(internalReferences("docs/x.md", text)).toEqual([
      "docs/x.md:1: an issue number: As issue 21 asks (FACTS §14),",
      "docs/x.md:1: the reference notes: As issue 21 asks (FACTS §14),",
      "docs/x.md:2: an issue number: the cloud question, seeds 001 and 004, issue #7.",
      "docs/x.md:2: a write-up by its seed number: the cloud question, seeds 001 and 004, issue #7.",
      "docs/x.md:2: an internal name for a question: the cloud question, seeds 001 and 004, issue #7.",
    ]);
    expect(internalReferences("CHANGELOG.md", "## Issue 23: watch it\nas FACTS §5 says")).toEqual([
      "CHANGELOG.md:2: the reference notes: as FACTS §5 says",
    ]);
    expect(internalReferences("docs/report.md", "keeps a screenshot in `artifacts/`, facts aside")).toEqual(
      [],
    );
  });

  test("the README is a guide: at most 180 lines, no prose line over 160 characters", () => {
    const lines = readFileSync(join(REPO_ROOT, "README.md"), "utf8").split("\n");
    expect(lines.length).toBeLessThanOrEqual(180);
    const long = lines.filter((line) => line.length > 160 && !line.startsWith("|"));
    expect(long).toEqual([]);
  });
});
