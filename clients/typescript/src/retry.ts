/**
 * When a failed call is sent again, and how long the client waits first.
 *
 * Retried, for idempotent operations only (every GET, and the POST routes that only read: see
 * `operations.ts`): a `503` (the service is temporarily unavailable), a `429` (rate limited), and
 * a connection that could not be made. A non-idempotent write is never sent twice by the client;
 * a 4xx other than 429 is never retried, and neither is a timeout (the caller's own bound).
 * Attempts are bounded.
 *
 * The wait before attempt `n + 1` is the server's `Retry-After` when it sent one, else "full
 * jitter" exponential backoff: a uniform draw from `[0, min(backoffMaxMs, backoffBaseMs *
 * 2**(n - 1))]`, so clients that failed together do not come back together.
 */

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export interface RetryOptions {
  /** The total number of tries (1 = never retry); default 3. */
  attempts?: number;
  /** Default 500 ms. */
  backoffBaseMs?: number;
  /** Default 8000 ms. */
  backoffMaxMs?: number;
  /** A `Retry-After` above this is not waited out: the error is thrown at once. Default 30000 ms. */
  maxRetryAfterMs?: number;
}

export class RetryPolicy {
  readonly attempts: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly maxRetryAfterMs: number;

  constructor({ attempts = 3, backoffBaseMs = 500, backoffMaxMs = 8000, maxRetryAfterMs = 30_000 }: RetryOptions = {}) {
    if (!Number.isInteger(attempts) || attempts < 1) {
      throw new RangeError("attempts must be an integer of at least 1");
    }
    if (backoffBaseMs < 0 || backoffMaxMs < 0 || maxRetryAfterMs < 0) {
      throw new RangeError("backoffBaseMs, backoffMaxMs and maxRetryAfterMs must not be negative");
    }
    this.attempts = attempts;
    this.backoffBaseMs = backoffBaseMs;
    this.backoffMaxMs = backoffMaxMs;
    this.maxRetryAfterMs = maxRetryAfterMs;
  }

  /**
   * Milliseconds to wait after failed attempt number `attempt` (1-based), or `null` when the call
   * must not be tried again. `retryAfterS` is the server's `Retry-After` in seconds, if any;
   * `random` draws from [0, 1).
   */
  delayMs(attempt: number, retryAfterS: number | null, random: () => number): number | null {
    if (attempt >= this.attempts) {
      return null;
    }
    if (retryAfterS !== null) {
      const ms = retryAfterS * 1000;
      return ms <= this.maxRetryAfterMs ? ms : null;
    }
    return random() * Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** (attempt - 1));
  }
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date; `null` if absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number = Date.now()): number | null {
  if (value === null) {
    return null;
  }
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) {
    return Number(trimmed);
  }
  // An HTTP date begins with its day name ("Sun, 06 Nov 1994 08:49:37 GMT"); Date.parse alone
  // would read "-3" as a year.
  const when = /^[A-Za-z]{3}/.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  return Number.isNaN(when) ? null : Math.max(0, (when - nowMs) / 1000);
}
