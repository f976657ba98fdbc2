// Owns request rate limits: a fixed window per integration client (its own allowance, or the
// service default) and per source address for calls without a known client. Limits are kept in
// process memory; each API process counts its own share.
import type { FastifyReply } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from './errors.ts';

export interface RateLimitState {
  limit: number;
  remaining: number;
  resetEpochSeconds: number;
  allowed: boolean;
  retryAfterSeconds: number;
}

const WINDOW_SECONDS = 60;

export class RateLimits {
  readonly #limiters = new Map<number, RateLimiterMemory>();

  #limiter(points: number): RateLimiterMemory {
    let limiter = this.#limiters.get(points);
    if (!limiter) {
      limiter = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix: `p${points}` });
      this.#limiters.set(points, limiter);
    }
    return limiter;
  }

  async consume(key: string, perMinute: number): Promise<RateLimitState> {
    const now = Date.now();
    try {
      const res = await this.#limiter(perMinute).consume(key);
      return {
        limit: perMinute,
        remaining: res.remainingPoints,
        resetEpochSeconds: Math.ceil((now + res.msBeforeNext) / 1000),
        allowed: true,
        retryAfterSeconds: 0,
      };
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      return {
        limit: perMinute,
        remaining: 0,
        resetEpochSeconds: Math.ceil((now + error.msBeforeNext) / 1000),
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)),
      };
    }
  }
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'x-ratelimit-limit': String(state.limit),
    'x-ratelimit-remaining': String(state.remaining),
    'x-ratelimit-reset': String(state.resetEpochSeconds),
  };
}

/** Counts one request against `key`, puts the X-RateLimit headers on the answer, and refuses with 429 past the limit. */
export async function limitOrRefuse(
  limits: RateLimits,
  reply: FastifyReply,
  key: string,
  perMinute: number,
): Promise<void> {
  const state = await limits.consume(key, perMinute);
  reply.headers(rateLimitHeaders(state));
  if (!state.allowed) {
    throw new AppError('rate_limited', `Too many requests; wait ${state.retryAfterSeconds} seconds.`, {
      headers: { 'retry-after': String(state.retryAfterSeconds) },
    });
  }
}

/** The allowance of a caller the service does not know (no valid key): counted by source address. */
export function sourceKey(ip: string): string {
  return `ip:${ip}`;
}
