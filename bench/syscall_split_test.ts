/**
 * bench/_syscall_split.ts on real `perf script` lines: 12 ms of `bun run bench:redis-behind-l1 --split`'s
 * behind-an-L1 server (tid 8776, --work-us 60) and the lab's Redis (tid 7800), 3 000 rps of vegeta.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { parsePerfScript, splitGets } from "./_syscall_split.ts";

const text = await Bun.file(join(import.meta.dir, "testdata/perf_script_behind_l1.txt")).text();
const SERVER = 8776;
const REDIS = 7800;

describe("a GET's round trip split at the socket calls", () => {
  test("perf script's lines parse into events: an enter's fd and the bytes it sends, an exit's return", () => {
    const events = parsePerfScript(text);
    expect(events).toHaveLength(153);
    expect(events[0]).toEqual({
      timeS: 10875.000108,
      tid: SERVER,
      name: "sys_enter_recvfrom",
      fd: 12,
    });
    expect(events[2]).toMatchObject({ name: "sys_enter_sendto", fd: 12, size: 0x1cb });
    expect(events[1]).toEqual({ timeS: 10875.00011, tid: SERVER, name: "sys_exit_recvfrom", ret: 0x78 });
  });

  test("each GET is followed from its send to Redis and back; a request read meanwhile marks it waited", () => {
    const split = splitGets(parsePerfScript(text), SERVER, REDIS);
    expect(split.sent).toBe(6);
    expect(split.followed).toBe(6);
    // The first: sent at .001877, read by Redis at .001898, answered at .001906, read back at .002018, after
    // the server read another request at .001933.
    const [first] = split.legs;
    expect(first?.outUs).toBeCloseTo(21, 3);
    expect(first?.redisUs).toBeCloseTo(8, 3);
    expect(first?.backUs).toBeCloseTo(112, 3);
    expect(first?.waited).toBe(true);
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    expect(split.backUs).toBeCloseTo(mean(split.legs.map((leg) => leg.backUs)), 6);
    expect(split.waitedShare).toBeCloseTo(split.legs.filter((leg) => leg.waited).length / 6, 10);
    const alone = split.legs.filter((leg) => !leg.waited);
    expect(split.backAloneUs).toBeCloseTo(mean(alone.map((leg) => leg.backUs)), 6);
  });

  test("a capture without Redis's replies, or without the server's commands, is refused, not read as 0", () => {
    const events = parsePerfScript(text);
    expect(() =>
      splitGets(
        events.filter((event) => event.tid !== REDIS),
        SERVER,
        REDIS,
      ),
    ).toThrow("Cannot split the GETs: the capture holds no reply Redis wrote");
    expect(() => splitGets(events, SERVER + 1, REDIS)).toThrow(
      "Cannot split the GETs: the capture holds no command the server sent",
    );
  });
});
