/** Creates a network of two hosts, prints its names, then waits to be killed (SIGKILL skips every cleanup). */
import { createNetwork } from "../netns.ts";

const network = createNetwork(["a", "b"]);
console.log(JSON.stringify({ bridge: network.bridge, namespaces: network.hosts.map((host) => host.namespace) }));
await Bun.sleep(60_000);
