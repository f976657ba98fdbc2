// Owns when and how long the client waits before trying a request again. Retried: no answer at all
// (when the request is safe to repeat), 409 `conflict` (the same Idempotency-Key is still running),
// 429 and 503; and 502 and 504 (a proxy or gateway lost the answer: the request may have been done)
// only on a GET or a request that carries an Idempotency-Key, which the service replays rather than
// doing twice. Never another 4xx: the service decided, and the same request gets the same answer.

export interface RetryPolicy {
  /** Attempts after the first (default 3). */
  maxRetries: number;
  /** First backoff delay in milliseconds (default 500); doubled on each retry. */
  baseDelayMs: number;
  /** Longest backoff wait when the service names none (default 60 000). */
  maxDelayMs: number;
  /** Longest Retry-After waited out (default 60 000); a longer one is thrown at once. */
  maxRetryAfterMs: number;
  /** Random number in [0, 1) for the jitter. */
  random: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 60_000,
  maxRetryAfterMs: 60_000,
  random: Math.random,
};

/**
 * Whether an error answer may be retried as it is; `replayable` says the request is a GET or carries
 * an Idempotency-Key, so that a gateway's 502 or 504 may be sent again.
 */
export function retryableAnswer(status: number, code: string | undefined, replayable = false): boolean {
  if (status === 502 || status === 504) return replayable;
  return status === 429 || status === 503 || (status === 409 && code === 'conflict');
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Milliseconds to wait before retry number `retry` (0 for the first): exponential backoff with
 * "equal jitter" (half fixed, half random), or the service's Retry-After plus up to one base delay
 * of jitter so that clients told the same time do not return together. undefined: do not retry,
 * the wait asked for is longer than maxRetryAfterMs.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retry: number,
  retryAfterSeconds?: number,
): number | undefined {
  const jitter = policy.random();
  if (retryAfterSeconds !== undefined) {
    const asked = retryAfterSeconds * 1000;
    if (asked > policy.maxRetryAfterMs) return undefined;
    return asked + Math.round(jitter * policy.baseDelayMs);
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(ceiling / 2 + (jitter * ceiling) / 2);
}
