/**
 * Postgres cancelled a statement at statement_timeout (PG_STATEMENT_TIMEOUT_MS): SQLSTATE 57014, as
 * postgres.js (`code`) and Bun.SQL (`errno`) report it, under drizzle's DrizzleQueryError (`cause`).
 * The database is slow or a row is locked, not the request wrong: 503 with Retry-After, never 500.
 */
const QUERY_CANCELED = "57014";

export function isStatementTimeout(error: unknown): boolean {
  for (let at = error, depth = 0; typeof at === "object" && at !== null && depth < 5; depth++) {
    const { code, errno, cause } = at as { code?: unknown; errno?: unknown; cause?: unknown };
    if (code === QUERY_CANCELED || errno === QUERY_CANCELED) return true;
    at = cause;
  }
  return false;
}

/** The 503 for a cancelled statement: retry once the timeout has passed. */
export function statementTimeoutResponse(timeoutMs: number): Response {
  const retryAfterS = Math.max(1, Math.ceil(timeoutMs / 1_000));
  return new Response(
    JSON.stringify({
      error: `Cannot answer: the database query ran past ${timeoutMs} ms and was cancelled: PG_STATEMENT_TIMEOUT_MS=${timeoutMs}`,
      retryAfterS,
    }),
    { status: 503, headers: { "content-type": "application/json", "retry-after": String(retryAfterS) } },
  );
}
