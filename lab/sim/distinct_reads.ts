/** What a replayed trace's distinct keys must be: counted off the requests sent, as the servers count them. */
import type { SimRequest } from "./simulate.ts";

/**
 * Distinct GET resources among `requests` as the servers count them (each instance its own, probes apart):
 * what a replayed trace's measured run must show exactly, since its requests are not a random draw.
 */
export function distinctReads(requests: readonly SimRequest[]): number {
  const seen = new Set<string>();
  for (const request of requests) {
    if (request.probe || request.op === "write") continue;
    // As the server counts them: an id, `summary:<id>`, or a list page.
    const resource =
      request.op === "detail"
        ? request.id
        : request.op === "summary"
          ? `summary:${request.id}`
          : `${request.category}:${request.page}:${request.size}`;
    seen.add(`${request.instance ?? 0} ${resource}`);
  }
  return seen.size;
}
