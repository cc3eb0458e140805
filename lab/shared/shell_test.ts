import { describe, expect, test } from "bun:test";
import { shellCommand, shellQuote } from "./shell.ts";

/** What bash hands a program for `line`'s words: `printf '%s\0'` put before them, the output split at NUL. */
async function wordsOf(line: string): Promise<string[]> {
  const proc = Bun.spawn(["bash", "-c", `printf '%s\\0' ${line}`], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  expect({ line, code: await proc.exited, stderr }).toEqual({ line, code: 0, stderr: "" });
  return stdout.split("\0").slice(0, -1);
}

const AWKWARD = [
  "plain",
  "",
  "two words",
  "it's",
  "'",
  "''",
  'say "hi"',
  "$HOME $(id) `id` \\n",
  "a\nb\n",
  'set -euo pipefail\nvegeta encode | sed -E \'s#,"body":("[A-Za-z0-9+/=]*"|null)##\' > out.jsonl',
  "*.json ?x [ab] {a,b} ~ !x #not a comment",
  "tab\there",
  "-rate=3000/1s",
  "ünïcode ✓",
];

describe("shell words", () => {
  test("bash reads every quoted word back as exactly the string it was made from", async () => {
    expect(await wordsOf(AWKWARD.map(shellQuote).join(" "))).toEqual(AWKWARD);
  });

  test("shellQuote leaves plain words bare and quotes the rest", () => {
    expect(shellQuote("/root/go/bin/vegeta")).toBe("/root/go/bin/vegeta");
    expect(shellQuote("-targets=targets.jsonl")).toBe("-targets=targets.jsonl");
    expect(shellQuote("")).toBe("''");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });

  test("shellCommand runs the program in its folder with its environment, the words intact", async () => {
    const line = shellCommand(["/bin/echo", ...AWKWARD], { cwd: "/tmp/a dir", env: { K6_X: "a b" } });
    expect(line).toStartWith("cd '/tmp/a dir' && K6_X='a b' /bin/echo plain '' 'two words' ");
    const proc = Bun.spawn(["bash", "-n", "-c", line], { stderr: "pipe" });
    expect(await proc.exited).toBe(0);
    expect(await wordsOf(line.slice(line.indexOf("/bin/echo")))).toEqual(["/bin/echo", ...AWKWARD]);
  });

  test("a program with = in its name is quoted, never read as an assignment", async () => {
    expect(shellCommand(["a=b", "c=d"])).toBe("'a=b' c=d");
    expect(() => shellCommand([])).toThrow("no program");
    expect(() => shellCommand(["x"], { env: { "1X": "v" } })).toThrow("not a variable name: received 1X");
  });
});
