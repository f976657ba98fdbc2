// Owns request rate limits: a fixed window per integration client (its own allowance, or the
// service default) and per source address for calls without a known client. A source address is
// counted in each process's memory; on PostgreSQL a client's counts live in the database (table rate_limits, migration 0016, through rate-limiter-flexible's PostgreSQL
// store), shared by every API process, so that a client's allowance is one however many processes
// serve it; on the embedded database, which has one process, in memory. When the store fails or does
// not answer within STORE_TIMEOUT_MS, the request is counted in this process's memory instead (the
// store's insurance), and so are the requests of the next STORE_RETRY_AFTER_MS without asking the
// store: limits then hold per process, as without a shared store, and no request is refused, failed
// or held up for long for want of a count. A store query shed by load shedding (RequestShed: the
// request waited too long for a connection) is no failure of the store: the request is refused with
// the shed 503 and nothing is counted or reserved for it. A process takes a client's count from the
// store a hundredth of the allowance at a time (a reservation) and counts the requests it serves from
// it in memory, so that most requests cost no database round trip; an allowance under 200 a minute
// is counted request by request. A window's end is written and compared on the database
// server's clock (DatabaseClockLimiter), so processes whose clocks disagree share one window all the
// same. Never decides who the caller is.
import type { FastifyReply } from 'fastify';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Trx } from '../db/transaction.ts';
import { countRateLimitRefusal } from '../observability/metrics.ts';
import { AppError } from './errors.ts';

import { RequestShed } from './load-shedding.ts';

interface PoolQuery {
  name?: string;
  text: string;
  values?: unknown[];
}

/** One statement outside any transaction (Database.poolQuery): what the PostgreSQL store runs on. */
export interface RateLimitStore {
  query(query: PoolQuery): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  resetEpochSeconds: number;
  allowed: boolean;
  retryAfterSeconds: number;
}

export const RATE_LIMIT_TABLE = 'rate_limits';

/** A count the shared store has not answered by then is made in memory instead. */
export const STORE_TIMEOUT_MS = 1000;

/**
 * After the store failed or timed out, counts are made in memory for this long before it is asked
 * again: while the database is away, a request waits for it at most once, not once per request.
 */
export const STORE_RETRY_AFTER_MS = 5000;

const WINDOW_SECONDS = 60;

/** A process reserves 1/RESERVATION_DIVISOR of a shared allowance at a time (reservationOf). */
const RESERVATION_DIVISOR = 100;

/** Past this many reservations, those whose window ended are dropped before another is made. */
const MAX_RESERVATIONS = 10_000;

/** Points of a shared window this process took from the store and has not spent yet. */
interface Reservation {
  left: number;
  /** What the store had left of the allowance, beyond every process's reservations, when last asked. */
  storeRemaining: number;
  /** When the window ends, on this process's clock. */
  resetAtMs: number;
  /** Set while the reservation is being asked for. */
  pending: Promise<void> | undefined;
}

/** A counter is deleted once its window ended this long ago (its key is then counted afresh anyway). */
const PURGE_AFTER_MS = 60 * 60 * 1000;

export interface RateLimitsOptions {
  /** The shared store (PostgreSQL); without it every count is this process's own. */
  store?: RateLimitStore;
  /**
   * Told when the store failed or was too slow and requests were counted in memory instead: at most
   * once a minute, with the latest error and how many counts failed since the last time.
   */
  onStoreFailure?: (error: unknown, failures: number) => void;
  storeTimeoutMs?: number;
  storeRetryAfterMs?: number;
}

/** The database server's now in epoch milliseconds: the clock every window is opened and judged by. */
const DATABASE_NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

interface StoreRow {
  points: number | string;
  expire: number | string | null;
  now: number | string;
}

/**
 * rate-limiter-flexible's PostgreSQL store with every window on the database server's clock. The
 * library writes a window's end as this process's Date.now() plus its length, and ends a window when
 * this process's clock passes it: a process whose clock ran ahead would end the other processes'
 * windows early (and one behind would keep them late). Here the upsert reads the server's now once,
 * opens, compares and ends windows by it, and returns it, so that the time left in the window is
 * counted from the same now. Same table, same statement shape otherwise (lib/RateLimiterPostgres.js
 * of rate-limiter-flexible 11); statement names of their own, so that no connection confuses them
 * with the library's.
 */
class DatabaseClockLimiter extends RateLimiterPostgres {
  declare private readonly _getTableIdentifier: () => string;
  declare private readonly _query: (
    query: PoolQuery,
  ) => Promise<{ rows: StoreRow[]; rowCount: number | null }>;
  declare private readonly tableCreated: boolean;

  _upsert(key: string, points: number, msDuration: number, forceExpire = false) {
    if (!this.tableCreated) return Promise.reject(new Error('Table is not created yet'));
    const table = this._getTableIdentifier();
    const ended = `${table}.expire <= (SELECT ms FROM now)`;
    return this._query({
      name: forceExpire ? 'rlflx-upsert-force-dbclock' : 'rlflx-upsert-dbclock',
      text: `
        WITH now AS (SELECT ${DATABASE_NOW_MS} AS ms)
        INSERT INTO ${table} (key, points, expire)
          SELECT $1, $2, now.ms + $3::bigint FROM now
          ON CONFLICT (key) DO UPDATE SET
            points = CASE WHEN ${forceExpire ? 'true' : ended} THEN $2 ELSE ${table}.points + ($2) END,
            expire = CASE WHEN ${forceExpire ? 'true' : ended} THEN EXCLUDED.expire ELSE ${table}.expire END
        RETURNING points, expire, (SELECT ms FROM now) AS now`,
      // No expiry (a duration of 0) is NULL, as in the library.
      values: [key, points, msDuration > 0 ? msDuration : null],
    });
  }

  _get(key: string) {
    if (!this.tableCreated) return Promise.reject(new Error('Table is not created yet'));
    const table = this._getTableIdentifier();
    return this._query({
      name: 'rlflx-get-dbclock',
      text: `
        WITH now AS (SELECT ${DATABASE_NOW_MS} AS ms)
        SELECT points, expire, now.ms AS now FROM ${table}, now
        WHERE key = $1 AND (expire > now.ms OR expire IS NULL)`,
      values: [key],
    }).then((result) => (result.rowCount === 0 ? null : result));
  }

  _getRateLimiterRes(_key: string, changedPoints: number, result: { rows: StoreRow[] }): RateLimiterRes {
    const row = result.rows[0]!;
    const points = Number(row.points);
    const isFirstInDuration = changedPoints === points;
    const consumedPoints = isFirstInDuration ? changedPoints : points;
    return new RateLimiterRes(
      Math.max(this.points - consumedPoints, 0),
      row.expire === null ? -1 : Math.max(Number(row.expire) - Number(row.now), 0),
      consumedPoints,
      isFirstInDuration,
    );
  }
}

function withTimeout<T>(pending: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the rate-limit store did not answer in ${ms} ms`)), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * Where a count is kept: `shared`, with every process on the database (a client's allowance); or
 * `process`, in this process's memory (a source address without a valid key: counting a flood of bad
 * keys in the database would turn it into database load, the opposite of what the limit is for).
 */
export type CountScope = 'shared' | 'process';

/** A shared allowance's limiter: in the store when there is one, with its insurance in memory. */
interface SharedLimiter {
  store: RateLimiterPostgres | undefined;
  memory: RateLimiterMemory;
}

export class RateLimits {
  readonly #limiters = new Map<number, SharedLimiter>();
  readonly #processLimiters = new Map<number, RateLimiterMemory>();
  readonly #store: RateLimitStore | undefined;
  /** This process's reservations of shared windows, by allowance and key. */
  readonly #reservations = new Map<string, Reservation>();

  constructor(options: RateLimitsOptions = {}) {
    const { store, onStoreFailure } = options;
    const timeoutMs = options.storeTimeoutMs ?? STORE_TIMEOUT_MS;
    const retryAfterMs = options.storeRetryAfterMs ?? STORE_RETRY_AFTER_MS;
    let failures = 0;
    let toldAt = Number.NEGATIVE_INFINITY;
    let skipUntil = Number.NEGATIVE_INFINITY;
    this.#store = store && {
      query: (query) => {
        if (Date.now() < skipUntil) return Promise.reject(new Error('the rate-limit store failed lately'));
        return withTimeout(store.query(query), timeoutMs).catch((error: unknown) => {
          // The request was shed while waiting for a connection: the store is fine.
          if (error instanceof RequestShed) throw error;
          skipUntil = Date.now() + retryAfterMs;
          failures += 1;
          if (Date.now() - toldAt >= 60_000) {
            toldAt = Date.now();
            onStoreFailure?.(error, failures);
            failures = 0;
          }
          throw error;
        });
      },
    };
  }

  /** True when counts are shared with every process on the database. */
  get shared(): boolean {
    return this.#store !== undefined;
  }

  #limiter(points: number): SharedLimiter {
    let limiter = this.#limiters.get(points);
    if (!limiter) {
      const window = { points, duration: WINDOW_SECONDS, keyPrefix: `p${points}` };
      // No insuranceLimiter given to the library: it would count in memory on any error, a shed
      // query's too (#consumeShared decides).
      const store =
        this.#store &&
        new DatabaseClockLimiter({
          ...window,
          storeClient: this.#store,
          storeType: 'pool',
          tableName: RATE_LIMIT_TABLE,
          // Migration 0016 made it; expired counters are purged by the worker (purgeExpiredRateLimits).
          tableCreated: true,
          clearExpiredByTimeout: false,
          // A key past its allowance is refused from memory until its window ends: a client that keeps
          // knocking costs the database nothing more.
          inMemoryBlockOnConsumed: points + 1,
        });
      limiter = { store, memory: new RateLimiterMemory(window) };
      this.#limiters.set(points, limiter);
    }
    return limiter;
  }

  /**
   * Consumes points of a shared window in the store, or in memory when the store failed (its
   * insurance). A refusal (RateLimiterRes) and a shed query (RequestShed) are thrown as they are.
   */
  async #consumeShared(key: string, perMinute: number, points: number): Promise<RateLimiterRes> {
    const { store, memory } = this.#limiter(perMinute);
    if (!store) return memory.consume(key, points);
    try {
      return await store.consume(key, points);
    } catch (error) {
      if (error instanceof RateLimiterRes || error instanceof RequestShed) throw error;
      return memory.consume(key, points);
    }
  }

  #processLimiter(points: number): RateLimiterMemory {
    let limiter = this.#processLimiters.get(points);
    if (!limiter) {
      limiter = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix: `p${points}` });
      this.#processLimiters.set(points, limiter);
    }
    return limiter;
  }

  /**
   * Counts one request against `key`. A shared count is taken from this process's reservation of the
   * key's window when it holds one (no database round trip); otherwise a reservation is made first,
   * one at a time per key, so that requests arriving together wait for it rather than each asking.
   */
  async consume(key: string, perMinute: number, scope: CountScope = 'shared'): Promise<RateLimitState> {
    if (scope === 'process' || !this.#store) return this.#count(key, perMinute, 1, scope).then(stateOf);
    const id = `${perMinute}:${key}`;
    for (;;) {
      const taken = this.#takeReserved(id, perMinute);
      if (taken) return taken;
      const pending = this.#reservations.get(id)?.pending;
      if (!pending) return this.#reserve(id, key, perMinute);
      await pending;
    }
  }

  /** A shared count served from this process's reservation, at once; undefined when there is none. */
  takeReserved(key: string, perMinute: number): RateLimitState | undefined {
    return this.#store ? this.#takeReserved(`${perMinute}:${key}`, perMinute) : undefined;
  }

  #takeReserved(id: string, perMinute: number): RateLimitState | undefined {
    const held = this.#reservations.get(id);
    if (!held || held.pending) return undefined;
    if (held.resetAtMs <= Date.now()) {
      this.#reservations.delete(id);
      return undefined;
    }
    if (held.left === 0) return undefined;
    held.left -= 1;
    return allowedFrom(held, perMinute);
  }

  /**
   * Asks the store for a batch of the key's allowance (reservationOf), keeps what is granted beyond
   * this request for the process's next ones, and answers this request.
   */
  async #reserve(id: string, key: string, perMinute: number): Promise<RateLimitState> {
    const batch = reservationOf(perMinute);
    if (this.#reservations.size >= MAX_RESERVATIONS) this.#forgetEnded();
    const held: Reservation = { left: 0, storeRemaining: 0, resetAtMs: 0, pending: undefined };
    let settle = () => {};
    held.pending = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.#reservations.set(id, held);
    try {
      const count = await this.#count(key, perMinute, batch, 'shared');
      // A refusal from memory (the key blocked until its window ends) reports nothing consumed.
      const granted = count.refused
        ? count.consumed === 0
          ? 0
          : Math.min(batch, Math.max(0, perMinute - (count.consumed - batch)))
        : batch;
      held.storeRemaining = Math.max(0, perMinute - count.consumed);
      held.resetAtMs = count.now + count.msBeforeNext;
      if (granted === 0) {
        this.#reservations.delete(id);
        return stateOf({ ...count, refused: true });
      }
      held.left = granted - 1;
      return allowedFrom(held, perMinute);
    } catch (error) {
      this.#reservations.delete(id);
      throw error;
    } finally {
      held.pending = undefined;
      settle();
    }
  }

  #forgetEnded(): void {
    const now = Date.now();
    for (const [id, held] of this.#reservations) {
      if (held.resetAtMs <= now && !held.pending) this.#reservations.delete(id);
    }
  }

  /** Consumes `points` of the key's window: how many the window has consumed, and when it ends. */
  async #count(key: string, perMinute: number, points: number, scope: CountScope): Promise<Count> {
    const now = Date.now();
    try {
      const res =
        scope === 'shared'
          ? await this.#consumeShared(key, perMinute, points)
          : await this.#processLimiter(perMinute).consume(key, points);
      return { perMinute, now, consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext, refused: false };
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      return {
        perMinute,
        now,
        consumed: error.consumedPoints,
        msBeforeNext: error.msBeforeNext,
        refused: true,
      };
    }
  }
}

interface Count {
  perMinute: number;
  /** This process's clock when the count was asked for. */
  now: number;
  /** Points the window has consumed, this count's included (0 when refused from memory). */
  consumed: number;
  msBeforeNext: number;
  refused: boolean;
}

/** A request counted from a reservation: what the store has left plus what this process still holds. */
function allowedFrom(held: Reservation, perMinute: number): RateLimitState {
  return {
    limit: perMinute,
    remaining: held.storeRemaining + held.left,
    resetEpochSeconds: Math.ceil(held.resetAtMs / 1000),
    allowed: true,
    retryAfterSeconds: 0,
  };
}

function stateOf(count: Count): RateLimitState {
  const resetEpochSeconds = Math.ceil((count.now + count.msBeforeNext) / 1000);
  if (count.refused) {
    return {
      limit: count.perMinute,
      remaining: 0,
      resetEpochSeconds,
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil(count.msBeforeNext / 1000)),
    };
  }
  return {
    limit: count.perMinute,
    remaining: Math.max(0, count.perMinute - count.consumed),
    resetEpochSeconds,
    allowed: true,
    retryAfterSeconds: 0,
  };
}

/**
 * The share of a shared allowance one process reserves at a time: a hundredth, so that a process holds
 * back at most 1% of a client's minute from the others, and an allowance below 200 a minute is counted
 * request by request in the store, exactly.
 */
export function reservationOf(perMinute: number): number {
  return Math.max(1, Math.floor(perMinute / RESERVATION_DIVISOR));
}

/** Deletes the shared counters whose window ended an hour or more ago; answers how many. */
export async function purgeExpiredRateLimits(trx: Trx, now: Date): Promise<number> {
  const result = await trx
    .deleteFrom('rate_limits')
    .where('expire', '<', now.getTime() - PURGE_AFTER_MS)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'x-ratelimit-limit': String(state.limit),
    'x-ratelimit-remaining': String(state.remaining),
    'x-ratelimit-reset': String(state.resetEpochSeconds),
  };
}

/**
 * Counts one request against `key`, puts the X-RateLimit headers on the answer, and refuses with 429
 * past the limit: at once (undefined) when the count is served from this process's reservation,
 * else a promise.
 */
export function limitOrRefuse(
  limits: RateLimits,
  reply: FastifyReply,
  key: string,
  perMinute: number,
  scope: CountScope = 'shared',
): Promise<void> | undefined {
  const reserved = scope === 'shared' ? limits.takeReserved(key, perMinute) : undefined;
  if (reserved) {
    answerWithLimit(reply, reserved, key);
    return undefined;
  }
  return limits.consume(key, perMinute, scope).then((state) => answerWithLimit(reply, state, key));
}

function answerWithLimit(reply: FastifyReply, state: RateLimitState, key: string): void {
  reply.headers(rateLimitHeaders(state));
  if (!state.allowed) {
    countRateLimitRefusal(key.startsWith('ip:') ? 'source' : 'client');
    throw new AppError('rate_limited', `Too many requests; wait ${state.retryAfterSeconds} seconds.`, {
      headers: { 'retry-after': String(state.retryAfterSeconds) },
    });
  }
}

/**
 * Counts a request of a caller the service does not know (no valid key) against its source address,
 * in this process's memory, as limitOrRefuse does.
 */
export function limitSourceOrRefuse(
  limits: RateLimits,
  reply: FastifyReply,
  ip: string,
  perMinute: number,
): Promise<void> {
  return limitOrRefuse(limits, reply, `ip:${ip}`, perMinute, 'process') ?? Promise.resolve();
}
