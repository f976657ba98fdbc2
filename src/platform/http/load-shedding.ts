// Owns load shedding in front of the public API: when a request would wait longer than a bound for a
// database connection (the longest current wait for one already lasts that long,
// src/platform/db/connection-waits.ts), or the event loop lags past a bound, the request is answered
// 503 service_unavailable with Retry-After at once, before authentication, idempotency or any
// database work, so that nothing of it was done and a retry is always safe. Each refusal is logged and
// counted by its reason. 429 stays the per-client rate limit (docs/decisions.md). The event loop's lag
// is sampled by a timer (how late it fired) and judged over a window: the highest sample of the last
// LAG_WINDOW_MS, so one late timer keeps counting for a while rather than until the next sample. How
// the lag is read can be replaced (readLagWith), for a caller that must not depend on how busy the
// machine is, such as a test, or for another monitor.
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import { longestConnectionWaitMs } from '../db/connection-waits.ts';
import type { Database } from '../db/database.ts';
import { AppError } from './errors.ts';

export interface LoadSheddingSettings {
  /** Refuse while a transaction has waited this long for a connection (0: never). */
  loadShedConnectionWaitMs: number;
  /** Refuse while the event loop lags this much (0: never). */
  loadShedEventLoopLagMs: number;
}

export type ShedReason = 'connection_wait' | 'event_loop_lag';

/** How often the event loop's lag is sampled. */
const LAG_SAMPLE_MS = 50;

/** The lag is the highest sample of this last stretch of time. */
export const LAG_WINDOW_MS = 1000;

/** Seconds a refused caller is asked to wait. */
export const SHED_RETRY_AFTER_SECONDS = 1;

export class LoadShedder {
  /** Requests refused, by reason, since the process started. */
  readonly shed: Record<ShedReason, number> = { connection_wait: 0, event_loop_lag: 0 };
  /** The lag samples of the last LAG_WINDOW_MS, oldest first. */
  readonly #samples: { at: number; lagMs: number }[] = [];
  #readLag: (() => number) | null = null;
  #timer: NodeJS.Timeout | undefined;
  readonly #db: Database;
  readonly #settings: LoadSheddingSettings;

  constructor(db: Database, settings: LoadSheddingSettings) {
    this.#db = db;
    this.#settings = settings;
  }

  /** Starts sampling the event loop's lag (when a bound is set); stop() ends it. */
  start(): void {
    if (this.#timer || this.#settings.loadShedEventLoopLagMs <= 0) return;
    let expected = performance.now() + LAG_SAMPLE_MS;
    this.#timer = setInterval(() => {
      const now = performance.now();
      this.#samples.push({ at: now, lagMs: Math.max(0, now - expected) });
      while (this.#samples[0]!.at < now - LAG_WINDOW_MS) this.#samples.shift();
      expected = now + LAG_SAMPLE_MS;
    }, LAG_SAMPLE_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The event loop's lag in milliseconds: the highest sample of the last LAG_WINDOW_MS. */
  get eventLoopLagMs(): number {
    if (this.#readLag) return this.#readLag();
    const since = performance.now() - LAG_WINDOW_MS;
    let highest = 0;
    for (const sample of this.#samples) if (sample.at >= since) highest = Math.max(highest, sample.lagMs);
    return highest;
  }

  /** Replaces how the event loop's lag is read (milliseconds); null goes back to the sampler's window. */
  readLagWith(read: (() => number) | null): void {
    this.#readLag = read;
  }

  /** Why a request arriving now is to be refused, or null to serve it. */
  reasonToShed(): ShedReason | null {
    const { loadShedConnectionWaitMs: waitBound, loadShedEventLoopLagMs: lagBound } = this.#settings;
    if (lagBound > 0 && this.eventLoopLagMs >= lagBound) return 'event_loop_lag';
    if (waitBound > 0 && longestConnectionWaitMs(this.#db) >= waitBound) return 'connection_wait';
    return null;
  }

  /** An onRequest hook: answers the 503 for a request to be refused, after logging and counting it. */
  readonly refuseWhenOverloaded = (
    request: FastifyRequest,
    _reply: unknown,
    done: (error?: Error) => void,
  ): void => {
    const reason = this.reasonToShed();
    if (!reason) {
      done();
      return;
    }
    this.shed[reason] += 1;
    request.log.warn(
      {
        reason,
        eventLoopLagMs: Math.round(this.eventLoopLagMs),
        connectionWaitMs: Math.round(longestConnectionWaitMs(this.#db)),
      },
      'request shed: the service is overloaded',
    );
    done(
      new AppError(
        'service_unavailable',
        'The service is overloaded and did not start this request; nothing was done. Retry after the seconds in Retry-After.',
        { headers: { 'retry-after': String(SHED_RETRY_AFTER_SECONDS) } },
      ),
    );
  };
}
