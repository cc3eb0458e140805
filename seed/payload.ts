/**
 * How big each seeded product's JSON body is: the same for every row (`fixed`), or one size per id
 * (`per-id`, e.g. a trace's value sizes), met by lengthening the description. The body is exact to the
 * byte while the row is as seeded, down to the row's smallest body (its other fields, ~125–160 bytes);
 * a size below that gives the smallest body (an empty description).
 */

/** The largest body a row may be sized to: 1 MiB. */
export const PAYLOAD_BYTES_MAX = 1_048_576;
/** The smallest size asked for; a row's other fields make its body longer than this anyway. */
export const PAYLOAD_BYTES_MIN = 1;

/**
 * `sizesByKey[i]` is id i + 1's body size; −1 (a key the trace gave no size for, as CompactTrace marks it) and
 * ids past its end keep the plan's `descriptionBytes`.
 */
export type PerIdPayload = { kind: "per-id"; sizesByKey: Int32Array; digest: string };
export type PayloadProfile = { kind: "fixed"; bytes: number } | PerIdPayload;

/** SHA-256 of the sizes as little-endian int32s: what the seed meta records of a per-id profile. */
export function sizesDigest(sizesByKey: Int32Array): string {
  const bytes = new Uint8Array(sizesByKey.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < sizesByKey.length; i++) view.setInt32(i * 4, sizesByKey[i] as number, true);
  return new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
}

/** A key the trace gave no size for (CompactTrace's −1): its row keeps the plan's description. */
export const UNSIZED = -1;

function checkSize(bytes: number, where: string, unsizedAllowed = true): void {
  if (unsizedAllowed && bytes === UNSIZED) return;
  if (!Number.isInteger(bytes) || bytes < PAYLOAD_BYTES_MIN || bytes > PAYLOAD_BYTES_MAX) {
    throw new RangeError(
      `Cannot size a payload: ${where} must be an integer in ${PAYLOAD_BYTES_MIN}..${PAYLOAD_BYTES_MAX} bytes${unsizedAllowed ? ` (or ${UNSIZED}: no size)` : ""}: received ${bytes}`,
    );
  }
}

/** The profile the trace runner seeds with: key i (first-seen order) is product id i + 1, sized sizesByKey[i]. */
export function sizeProfileFromTrace(sizesByKey: Int32Array): PerIdPayload {
  if (!sizesByKey.some((size) => size !== UNSIZED)) {
    throw new RangeError("Cannot size payloads from a trace: received no sizes");
  }
  for (let i = 0; i < sizesByKey.length; i++) checkSize(sizesByKey[i] as number, `the size of key ${i}`);
  return { kind: "per-id", sizesByKey, digest: sizesDigest(sizesByKey) };
}

/**
 * Each key's value size in a trace (CompactTrace's per-request `sizeBytes`, −1 where a request has none): the
 * last size its requests gave, the value as the trace leaves it; −1 for a key none of them sized. null: the
 * trace has no sizes at all.
 */
export function sizesByKeyOf(trace: {
  keyIndex: Int32Array;
  sizeBytes: Int32Array | null;
  keys: readonly string[];
}): Int32Array | null {
  const { keyIndex, sizeBytes } = trace;
  if (sizeBytes === null) return null;
  const sizes = new Int32Array(trace.keys.length).fill(UNSIZED);
  for (let i = 0; i < keyIndex.length; i++) {
    const size = sizeBytes[i] as number;
    if (size !== UNSIZED) sizes[keyIndex[i] as number] = size;
  }
  return sizes;
}

/** Throws RangeError on a size out of range, or a per-id profile whose digest is not its sizes'. */
export function checkPayloadProfile(profile: PayloadProfile, rows: number): void {
  if (profile.kind === "fixed") {
    checkSize(profile.bytes, "payloadBytes.bytes", false);
    return;
  }
  if (profile.sizesByKey.length > rows) {
    throw new RangeError(
      `Cannot size payloads: ${profile.sizesByKey.length} sizes for ${rows} rows: received sizesByKey of length ${profile.sizesByKey.length}`,
    );
  }
  for (let i = 0; i < profile.sizesByKey.length; i++) {
    checkSize(profile.sizesByKey[i] as number, `sizesByKey[${i}]`);
  }
  if (!profile.sizesByKey.some((size) => size !== UNSIZED)) {
    throw new RangeError("Cannot size payloads: every key is unsized: received no sizes");
  }
  const digest = sizesDigest(profile.sizesByKey);
  if (digest !== profile.digest) {
    throw new RangeError(`Cannot size payloads: the digest is not the sizes': received ${profile.digest}`);
  }
}

/** The body size asked for id `id`, or null: the row keeps the plan's fixed description. */
export function payloadBytesOf(profile: PayloadProfile | undefined, id: number): number | null {
  if (profile === undefined) return null;
  if (profile.kind === "fixed") return profile.bytes;
  const size = profile.sizesByKey[id - 1];
  return size === undefined || size === UNSIZED ? null : size;
}

/** The largest size a profile asks for (0 without one): how long a corpus the descriptions are cut from. */
export function payloadBytesMax(profile: PayloadProfile | undefined): number {
  if (profile === undefined) return 0;
  if (profile.kind === "fixed") return profile.bytes;
  let max = 0;
  for (const size of profile.sizesByKey) if (size > max) max = size;
  return max;
}

function nearestRankOf(sorted: Int32Array, percent: number): number {
  return sorted[Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1)] as number;
}

/**
 * The profile as the seed meta records it and a plan compares: `fixed 2000`, or
 * `per-id n=… p50=… p99=… max=… sha256=…` (nearest-rank percentiles of the sizes asked for). null without one.
 */
export function describePayload(profile: PayloadProfile | undefined): string | null {
  if (profile === undefined) return null;
  if (profile.kind === "fixed") return `fixed ${profile.bytes}`;
  const sorted = profile.sizesByKey.filter((size) => size !== UNSIZED).sort();
  const unsized = profile.sizesByKey.length - sorted.length;
  const max = sorted[sorted.length - 1] ?? 0;
  return `per-id n=${sorted.length}${unsized > 0 ? ` unsized=${unsized}` : ""} p50=${nearestRankOf(sorted, 50)} p99=${nearestRankOf(sorted, 99)} max=${max} sha256=${profile.digest}`;
}
