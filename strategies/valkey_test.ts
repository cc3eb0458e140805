/**
 * The strategy contract (strategies/_contract.ts) against Valkey: this repo's strategies on the lab's
 * valkey-server beside its Redis (install-deps.sh's pin), on the clients the repo's suite runs them on over one
 * Redis (strategies_test.ts): ioredis (tracking too, its two connections) and Bun's RedisClient. tracking on
 * node-redis, with Valkey's CLIENT TRACKING pushes, is valkey_tracking_test.ts (in the quick set). Faults through a Toxiproxy of this
 * file's own in front of Valkey. A machine without valkey-server fails here; it never skips.
 */
import { ownFaults, repoStrategies as repo } from "../lab/shared/strategy_testing.ts";
import { testValkeyUrl } from "../lab/shared/testing.ts";
import { strategyContract } from "./_contract.ts";

const faults = ownFaults();
strategyContract("repo on Valkey", repo, testValkeyUrl, faults);
strategyContract("repo on Valkey, Bun's RedisClient", repo, testValkeyUrl, faults, "bun");
