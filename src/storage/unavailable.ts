// Whether an error means a shared engine (PostgreSQL, the S3 store) could not be reached or went
// away mid-request, as opposed to a fault in the request or in Atrium. Such a request is answered
// 503 with a retry-after: nothing of it was committed (each write is one transaction or one
// object), and it succeeds again once the engine is back.

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "ECONNABORTED"]);

// PostgreSQL SQLSTATEs: class 08 (connection exception); 57P01-57P03 (the server is shutting
// down, crashed, or not accepting connections yet); 53300 (too many connections).
const PG_STATES = /^(08...|57P0[123]|53300)$/;

// node-postgres reports a lost or refused connection by message only.
const PG_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|the database system is (starting up|shutting down)/i;

export function isEngineUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 4) return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; $metadata?: { httpStatusCode?: number }; cause?: unknown; errors?: unknown[] };
  if (typeof e.code === "string" && (NETWORK_CODES.has(e.code) || PG_STATES.test(e.code))) return true;
  if (typeof e.message === "string" && PG_MESSAGES.test(e.message)) return true;
  // The AWS SDK: no answer at all (a timeout), or the store itself said it is unavailable.
  if (e.name === "TimeoutError" || e.name === "RequestTimeout") return true;
  const status = e.$metadata?.httpStatusCode;
  if (status === 503 || status === 502 || status === 504) return true;
  // AggregateError (a connect to several addresses) and wrapped causes.
  if (Array.isArray(e.errors) && e.errors.some((x) => isEngineUnavailable(x, depth + 1))) return true;
  return isEngineUnavailable(e.cause, depth + 1);
}
