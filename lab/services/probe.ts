/**
 * Whether a Postgres or Redis URL answers, and with which version; waiting for one to; the database and
 * the pg_stat_statements extension the lab needs on it.
 */
import { Redis } from "ioredis";
import postgres from "postgres";
import { databaseOwnership } from "../../seed/ownership.ts";
import { portAnswers } from "../shared/ports.ts";
import type { ServiceName } from "./state.ts";
import { errorMessage, READY_TIMEOUT_MS } from "./state.ts";

/** `server`: for Redis, what INFO says it is (`server_name`: `valkey`; Redis has no such field: `redis`). */
export type ProbeResult =
  | { ok: true; version: string | null; server?: string }
  | { ok: false; reason: string };

/** Creates the extension in whichever Postgres is used; counters stay empty unless it is preloaded. */
export async function ensurePgStatStatements(url: string, log: (line: string) => void): Promise<void> {
  const sql = postgres(url, probeOptions());
  try {
    // Creating an extension is a write: only in a database that is cachelab's (seed/ownership.ts).
    if (!(await databaseOwnership(sql)).owned) return;
    await sql`create extension if not exists pg_stat_statements`;
    const rows = await sql<
      { libraries: string }[]
    >`select current_setting('shared_preload_libraries') as libraries`;
    const libraries = (rows[0]?.libraries ?? "").split(",").map((library) => library.trim());
    if (!libraries.includes("pg_stat_statements")) {
      log("postgres: pg_stat_statements is not in shared_preload_libraries; its view will not answer");
    }
  } catch (error) {
    log(`postgres: cannot create extension pg_stat_statements: ${errorMessage(error)}`);
  } finally {
    await sql.end({ timeout: 0 });
  }
}

export async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, probeOptions());
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`;
    if (rows.length > 0) return;
    await sql.unsafe(`create database "${database}"`);
  } catch (error) {
    // 42P04 duplicate_database: a concurrent servicesUp created it first.
    if ((error as { code?: string }).code !== "42P04") throw error;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

export function probeOptions() {
  return { max: 1, connect_timeout: 2, idle_timeout: 1, onnotice: () => {} };
}

/** One protocol round trip (`show server_version` / `INFO server`); never throws. */
export async function probe(name: ServiceName, url: string): Promise<ProbeResult> {
  return name === "postgres" ? await probePostgres(url) : await probeRedis(url);
}

export async function probePostgres(url: string): Promise<ProbeResult> {
  let sql: postgres.Sql | undefined;
  try {
    sql = postgres(url, probeOptions());
    const rows = await sql<{ server_version: string }[]>`show server_version`;
    return { ok: true, version: rows[0]?.server_version ?? null };
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  } finally {
    await sql?.end({ timeout: 0 });
  }
}

export async function probeRedis(url: string): Promise<ProbeResult> {
  let client: Redis | undefined;
  try {
    client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      retryStrategy: () => null,
    });
    // The failure surfaces through the rejected connect(); without a listener ioredis prints it too.
    client.on("error", () => {});
    await client.connect();
    const info = await client.info("server");
    const field = (name: string) => new RegExp(`^${name}:(.+)$`, "m").exec(info)?.[1]?.trim() ?? null;
    const server = field("server_name") ?? "redis";
    // Valkey also answers redis_version, with the Redis version it is compatible with (7.2.4): not its own.
    const version = (server === "valkey" ? field("valkey_version") : null) ?? field("redis_version");
    return { ok: true, version, server };
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  } finally {
    // disconnect() on an already-ended client arms ioredis's 2 s disconnectTimeout on a stream that will
    // never emit "close" again, which keeps the process alive for 2 s.
    if (client && client.status !== "end") client.disconnect();
  }
}

/** Probes with a short backoff until the server answers, its process is gone, or the deadline passes. */
export async function waitUntilAnswers(
  name: ServiceName,
  url: string,
  stillRunning: () => boolean = () => true,
): Promise<ProbeResult> {
  const deadlineMs = performance.now() + READY_TIMEOUT_MS;
  let delayMs = 25;
  for (;;) {
    const result = await probe(name, url);
    if (result.ok || !stillRunning() || performance.now() >= deadlineMs) return result;
    await Bun.sleep(delayMs);
    delayMs = Math.min(delayMs * 2, 500);
  }
}

/** True when something accepts a TCP connection at the URL's host and port. */
export function tcpAnswers(url: string): Promise<boolean> {
  const { hostname, port } = hostAndPort(url);
  return portAnswers(port, hostname);
}

export function hostAndPort(url: string): { hostname: string; port: number } {
  const parsed = new URL(url);
  const defaultPort = parsed.protocol.startsWith("redis") ? 6379 : 5432;
  return { hostname: parsed.hostname || "127.0.0.1", port: parsed.port ? Number(parsed.port) : defaultPort };
}

export function hostPort(url: string): string {
  const { hostname, port } = hostAndPort(url);
  return `${hostname}:${port}`;
}

/** The URL with its password masked, for messages that may end up in logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}
