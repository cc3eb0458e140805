/**
 * A trace file's lines, streamed: plain, gzip or zstd (by extension, else by the file's magic bytes),
 * decompressed by node:zlib's streams, split on \n with a trailing \r dropped. Each line is decoded from
 * its own bytes, so a key kept from it does not pin the 1 MiB chunk it came from (a substring of a chunk
 * string would), and at most one chunk and one partial line are held at a time.
 */
import { closeSync, createReadStream, openSync, readSync } from "node:fs";
import type { Readable } from "node:stream";
import { createGunzip, createZstdDecompress } from "node:zlib";

export type Compression = "gzip" | "zstd" | null;

/** A line longer than this is refused: it is not a trace line, and holding it would have no bound. */
export const MAX_LINE_BYTES = 1 << 20;

/** Consecutive lines; `invalidUtf8` holds the numbers of lines that are not valid UTF-8. */
export interface LineBatch {
  /** The 1-based number of `lines[0]`. */
  firstLine: number;
  lines: string[];
  invalidUtf8: Set<number> | null;
}

/** A failure of the file itself (not of one line): unreadable, corrupt, or a line with no end. */
export class TraceStreamError extends Error {
  override name = "TraceStreamError";
  constructor(
    message: string,
    /** The last line read whole before the failure. */
    readonly afterLine: number,
  ) {
    super(message);
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/** How a trace file is compressed: by its extension, else by its first bytes. */
export function compressionOf(path: string): Compression {
  const lower = path.toLowerCase();
  if (lower.endsWith(".gz")) return "gzip";
  if (lower.endsWith(".zst")) return "zstd";
  const head = Buffer.alloc(4);
  const fd = openSync(path, "r");
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  if (GZIP_MAGIC.every((byte, i) => head[i] === byte)) return "gzip";
  if (ZSTD_MAGIC.every((byte, i) => head[i] === byte)) return "zstd";
  return null;
}

function openStream(path: string, compression: Compression): { stream: Readable; close(): void } {
  const file = createReadStream(path, { highWaterMark: 1 << 20 });
  if (compression === null) return { stream: file, close: () => file.destroy() };
  const decompress = compression === "gzip" ? createGunzip() : createZstdDecompress();
  file.on("error", (error) => decompress.destroy(error));
  file.pipe(decompress);
  return {
    stream: decompress,
    close() {
      file.destroy();
      decompress.destroy();
    },
  };
}

function tooLong(lineNumber: number): TraceStreamError {
  return new TraceStreamError(`line ${lineNumber} is longer than ${MAX_LINE_BYTES} bytes`, lineNumber - 1);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** The file's lines in batches of about one chunk; stopping early (a limit) closes the file. */
export async function* traceLineBatches(path: string): AsyncGenerator<LineBatch> {
  let compression: Compression;
  try {
    compression = compressionOf(path);
  } catch (error) {
    throw new TraceStreamError(`opening failed: ${(error as Error).message}`, 0);
  }
  const { stream, close } = openStream(path, compression);
  let lineNumber = 1;
  let rest: Buffer | null = null;
  let start = true;
  function split(buffer: Buffer, final: boolean): LineBatch {
    const batch: LineBatch = { firstLine: lineNumber, lines: [], invalidUtf8: null };
    let from = 0;
    // A UTF-8 byte order mark (Excel's csv) is no part of the first line.
    if (start && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf) from = 3;
    start = false;
    for (;;) {
      let end = buffer.indexOf(10, from);
      if (end < 0) {
        if (!final || from >= buffer.length) break;
        end = buffer.length;
      }
      const stop = end > from && buffer[end - 1] === 13 ? end - 1 : end;
      if (stop - from > MAX_LINE_BYTES) throw tooLong(lineNumber);
      const line = buffer.toString("utf8", from, stop);
      if (line.includes("\uFFFD") && !isValidUtf8(buffer.subarray(from, stop))) {
        batch.invalidUtf8 ??= new Set();
        batch.invalidUtf8.add(lineNumber);
      }
      batch.lines.push(line);
      lineNumber++;
      from = end + 1;
    }
    rest = from < buffer.length ? buffer.subarray(from) : null;
    if (rest !== null && rest.length > MAX_LINE_BYTES) throw tooLong(lineNumber);
    return batch;
  }
  try {
    try {
      for await (const chunk of stream) {
        const buffer: Buffer = rest === null ? (chunk as Buffer) : Buffer.concat([rest, chunk as Buffer]);
        const batch = split(buffer, false);
        if (batch.lines.length > 0) yield batch;
      }
    } catch (error) {
      if (error instanceof TraceStreamError) throw error;
      const what = compression === null ? "reading" : `${compression} decompression`;
      throw new TraceStreamError(`${what} failed: ${(error as Error).message}`, lineNumber - 1);
    }
    if (rest !== null) yield split(rest, true);
  } finally {
    close();
  }
}
