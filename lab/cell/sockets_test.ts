import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { countTimeWait, settleSockets, timeWaitTo } from "./sockets.ts";

// Captured from this machine's /proc/net/tcp: a listener on 18474, and TIME_WAIT (06) sockets to 0x9C45
// (40005) and 0x482A (18474).
const PROC_NET_TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:482A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1120398 1 00000000c5ad0116 100 0 0 10 0
   1: 0100007F:D2F0 0100007F:9C45 06 00000000:00000000 03:00001770 00000000     0        0 0 3 00000000a3b2c1d0
   2: 0100007F:D2F2 0100007F:9C45 06 00000000:00000000 03:00001770 00000000     0        0 0 3 00000000a3b2c1d1
   3: 0100007F:D2F4 0100007F:482A 06 00000000:00000000 03:00001770 00000000     0        0 0 3 00000000a3b2c1d2
   4: 0100007F:D2F6 0100007F:9C45 01 00000000:00000000 00:00000000 00000000     0        0 1120400 1 00000000a3b2c1d3
`;

describe("sockets a cell leaves behind", () => {
  test("countTimeWait counts TIME_WAIT sockets by remote port, not listeners or established ones", () => {
    expect(countTimeWait(PROC_NET_TCP, 40_005)).toBe(2);
    expect(countTimeWait(PROC_NET_TCP, 18_474)).toBe(1);
    expect(countTimeWait(PROC_NET_TCP, 1)).toBe(0);
  });

  test("a connection the client closes first leaves a TIME_WAIT socket to the server's port", async () => {
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data() {},
        close() {},
        end(socket) {
          socket.end();
        },
      },
    });
    try {
      const before = timeWaitTo(server.port);
      for (let i = 0; i < 5; i++) {
        await new Promise<void>((resolve) => {
          const client = connect(server.port, "127.0.0.1", () => client.end());
          client.on("close", () => resolve());
        });
      }
      await Bun.sleep(50);
      expect(timeWaitTo(server.port) - before).toBe(5);
      // Under the threshold already: no wait.
      expect((await settleSockets(server.port, { max: 100 })).waitedMs).toBeLessThan(100);
      // Over it, with a short timeout: it waits, then gives up and says how many are left.
      const stuck = await settleSockets(server.port, { max: 1, timeoutMs: 600 });
      expect(stuck.waitedMs).toBeGreaterThanOrEqual(500);
      expect(stuck.left).toBeGreaterThanOrEqual(5);
    } finally {
      server.stop(true);
    }
  });
});
