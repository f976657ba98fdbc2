// Owns load shedding in front of the public API. A request is answered 503 service_unavailable with
// Retry-After, having done nothing (no transaction started, no Idempotency-Key taken, no audit row),
// so that a retry is always safe, when:
//  - it arrives while the event loop lags past a bound (event_loop_lag);
//  - it arrives while as many requests as the in-flight limit are being served (in_flight_limit): a
//    concurrency limiter, which bounds the queue for connections and so every later wait too; given a
//    latency target, the limit follows the answer times of the requests it admits
//    (AdaptiveInFlightLimit, ./adaptive-limit.ts);
//  - its first connection would wait the connection-wait bound or more (connection_wait): refused on
//    arrival while a newcomer's wait is predicted that long (the queue ahead of it at the recent hold
//    time) or a current wait already lasts that long; and otherwise, through its FirstConnectionBound
//    (src/platform/db/connection-waits.ts), by each wait before its first transaction has a
//    connection, predicted or reached. From its first transaction on, a request's waits are never
//    cut: it may have done work by then;
//  - it would queue claim work (its route says so: a claim sent, resubmitted or reversed)
//    while the claims lane's oldest due job has waited the claim-backlog bound or more for a worker
//    (claim_backlog): the API then stops admitting more claim work than the workers finish, so the
//    queue behind them stays short and its claims answered in seconds. The backlog is read by a
//    statement of its own, at most every BACKLOG_SAMPLE_MS, only when such a request arrives, and
//    trusted for BACKLOG_TRUST_MS;
// A bill with submitClaim is never refused for the claims backlog: the contract has a bill create its
// invoice whether or not claiming succeeds, so the bill asks claimWorkHeldBack and, past the bound,
// creates (and issues) the invoice and skips the claim, saying why in claimSkippedReason. A practice's
// slow webhook receivers never refuse its requests: its deliveries queue behind its own cap in the
// webhooks lane instead (WEBHOOK_PRACTICE_CONCURRENCY, src/jobs/take.ts).
// Each refusal is logged and counted by its reason; requests in flight and how long first connections
// waited are counted for the operator (src/service-metrics.ts). 429 stays the per-client rate limit
// (docs/decisions/0022-load-shedding-answers-503.md). The event loop's lag is sampled by a timer (how late it fired) and judged over a
// window: the highest sample of the last LAG_WINDOW_MS, so one late timer keeps counting for a while
// rather than until the next sample. How the lag is read can be replaced (readLagWith), for a caller
// that must not depend on how busy the machine is, such as a test, or for another monitor.
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { FirstConnectionBound, type RefusedWait, runWithConnectionBound } from '../db/connection-waits.ts';
import type { Database } from '../db/database.ts';
import { AdaptiveInFlightLimit } from './adaptive-limit.ts';
import { AppError } from './errors.ts';

export interface LoadSheddingSettings {
  /** Refuse requests that queue claim work while the claims backlog is this old (0: never). */
  loadShedClaimBacklogMs: number;
  /** Refuse when a request's first connection would wait this long (0: never). */
  loadShedConnectionWaitMs: number;
  /** Refuse while the event loop lags this much (0: never). */
  loadShedEventLoopLagMs: number;
  /** Refuse while this many requests are in flight (0: never). */
  loadShedMaxInFlight: number;
  /** The answer time the in-flight limit steers by (0: the limit stays loadShedMaxInFlight). */
  loadShedLatencyTargetMs: number;
}

export const SHED_REASONS = [
  'connection_wait',
  'event_loop_lag',
  'in_flight_limit',
  'claim_backlog',
] as const;
export type ShedReason = (typeof SHED_REASONS)[number];

/** How often the event loop's lag is sampled. */
const LAG_SAMPLE_MS = 50;

/** The lag is the highest sample of this last stretch of time. */
export const LAG_WINDOW_MS = 1000;

/** The claims backlog is read at most this often, and only when a request that queues claim work arrives. */
export const BACKLOG_SAMPLE_MS = 500;

/** A reading of the claims backlog counts for this long; an older one is not used. */
export const BACKLOG_TRUST_MS = 2000;

/** Whether a request's route queues claim work (an API route's `queuesClaimWork`, src/api/api-route.ts). */
function queuesClaimWork(request: FastifyRequest): boolean {
  return (request.routeOptions.config as { queuesClaimWork?: boolean } | undefined)?.queuesClaimWork === true;
}

/** Seconds a refused caller is asked to wait. */
export const SHED_RETRY_AFTER_SECONDS = 1;

/** The refusal of a shed request: a 503 that says nothing was done. */
export class RequestShed extends AppError {
  readonly reason: ShedReason;

  constructor(reason: ShedReason) {
    super(
      'service_unavailable',
      'The service is overloaded and did not start this request; nothing was done. Retry after the seconds in Retry-After.',
      { headers: { 'retry-after': String(SHED_RETRY_AFTER_SECONDS) } },
    );
    this.reason = reason;
  }
}

/** How long requests waited for their first connection (those that had one), since the process started. */
export interface FirstConnectionWaits {
  requests: number;
  longestMs: number;
}

export class LoadShedder {
  /** Requests refused, by reason, since the process started. */
  readonly shed: Record<ShedReason, number> = {
    connection_wait: 0,
    event_loop_lag: 0,
    in_flight_limit: 0,
    claim_backlog: 0,
  };
  readonly firstConnectionWaits: FirstConnectionWaits = { requests: 0, longestMs: 0 };
  #inFlight = 0;
  #peakInFlight = 0;
  readonly #limit: AdaptiveInFlightLimit;
  /** The lag samples of the last LAG_WINDOW_MS, oldest first. */
  readonly #samples: { at: number; lagMs: number }[] = [];
  #readLag: (() => number) | null = null;
  #timer: NodeJS.Timeout | undefined;
  readonly #db: Database;
  readonly #settings: LoadSheddingSettings;
  /** The claims lane's backlog, one reading for the whole process. */
  readonly #claimBacklog: BacklogReading;

  constructor(db: Database, settings: LoadSheddingSettings, backlogs: BacklogReaders = {}) {
    this.#db = db;
    this.#settings = settings;
    this.#claimBacklog = new BacklogReading(backlogs.claimBacklogMs ?? null);
    this.#limit = new AdaptiveInFlightLimit(settings.loadShedMaxInFlight, settings.loadShedLatencyTargetMs);
  }

  /** The claims backlog as last read (milliseconds), while that reading is trusted; else 0. */
  get claimBacklogMs(): number {
    return this.#claimBacklog.trusted();
  }

  /** The most requests in flight at once now: 0 when there is no limit. */
  get maxInFlight(): number {
    return this.#limit.current;
  }

  /** The most the in-flight limit rises to (LOAD_SHED_MAX_IN_FLIGHT): 0 when there is no limit. */
  get inFlightCeiling(): number {
    return this.#limit.ceiling;
  }

  /** The answer time the in-flight limit steers by: 0 when it is fixed. */
  get latencyTargetMs(): number {
    return this.#limit.targetMs;
  }

  /** Requests admitted and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** The most requests ever in flight at once since the process started. */
  get peakInFlight(): number {
    return this.#peakInFlight;
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

  /** Why a request arriving now is to be refused, or null to serve it; `queuesClaims` when it would queue claim work. */
  reasonToShed(queuesClaims = false): ShedReason | null {
    const { loadShedConnectionWaitMs: waitBound, loadShedEventLoopLagMs: lagBound } = this.#settings;
    if (lagBound > 0 && this.eventLoopLagMs >= lagBound) return 'event_loop_lag';
    if (this.maxInFlight > 0 && this.#inFlight >= this.maxInFlight) return 'in_flight_limit';
    const connections = this.#db.connections;
    if (
      waitBound > 0 &&
      (connections.predictedWaitMs() >= waitBound || connections.longestWaitMs() >= waitBound)
    ) {
      return 'connection_wait';
    }
    return queuesClaims ? this.#claimBacklogReason() : null;
  }

  #claimBacklogReason(): ShedReason | null {
    const bound = this.#settings.loadShedClaimBacklogMs;
    if (bound <= 0) return null;
    this.#claimBacklog.sample();
    return this.claimBacklogMs >= bound ? 'claim_backlog' : null;
  }

  /**
   * For a bill with submitClaim: why its claim is held back (the claims backlog past its bound), or
   * null to queue it. Counted as a claim_backlog shed; the bill itself is served.
   */
  claimWorkHeldBack(): string | null {
    if (this.#claimBacklogReason() === null) return null;
    this.shed.claim_backlog += 1;
    return 'The insurer claims queue is behind; the claim was not sent. Send it with POST /invoices/{invoiceId}/claim once the queue has caught up (retry after a few seconds).';
  }

  /**
   * An onRequest hook (the first of the API): refuses an overloaded request with its 503, or admits
   * it: counted in flight until its answer is out (or its caller has gone), and run under the bound on
   * its first connection.
   */
  readonly admit = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const reason = this.reasonToShed(queuesClaimWork(request));
    if (reason) {
      done(this.#refuse(request, reason, {}));
      return;
    }
    this.#inFlight += 1;
    this.#peakInFlight = Math.max(this.#peakInFlight, this.#inFlight);
    const admittedAt = performance.now();
    reply.raw.once('close', () => {
      this.#inFlight -= 1;
      if (reply.statusCode !== 503) this.#limit.answered(admittedAt, performance.now() - admittedAt);
    });
    const boundMs = this.#settings.loadShedConnectionWaitMs;
    if (boundMs <= 0) {
      done();
      return;
    }
    const bound = new FirstConnectionBound(
      boundMs,
      (why) => this.#refuse(request, 'connection_wait', why),
      (waitedMs) => {
        this.firstConnectionWaits.requests += 1;
        this.firstConnectionWaits.longestMs = Math.max(this.firstConnectionWaits.longestMs, waitedMs);
      },
    );
    // The rest of the request runs under the bound. Reading a body does not leave it: Fastify's
    // content-type parser goes on, once the body is read, in the async context it was called in.
    runWithConnectionBound(bound, done);
  };

  /** The refusal of a request, logged and counted. */
  #refuse(
    request: FastifyRequest,
    reason: ShedReason,
    wait: Partial<RefusedWait>,
    logged: Record<string, number> = {},
  ): RequestShed {
    this.shed[reason] += 1;
    const connections = this.#db.connections;
    request.log.warn(
      {
        reason,
        eventLoopLagMs: Math.round(this.eventLoopLagMs),
        claimBacklogMs: Math.round(this.claimBacklogMs),
        ...logged,
        requestsInFlight: this.#inFlight,
        connectionWaiters: connections.waiters,
        longestConnectionWaitMs: Math.round(connections.longestWaitMs()),
        predictedConnectionWaitMs: Math.round(wait.predictedMs ?? connections.predictedWaitMs()),
        ...(wait.waitedMs !== undefined ? { waitedMs: Math.round(wait.waitedMs) } : {}),
      },
      'request shed: the service is overloaded',
    );
    return new RequestShed(reason);
  }
}

/** What reads the backlogs the shedder judges by (milliseconds the oldest due job has waited). */
export interface BacklogReaders {
  /** The claims lane's, all practices together. */
  claimBacklogMs?: () => Promise<number>;
}

/** The latest reading of a backlog, sampled and trusted as BACKLOG_*_MS say. */
class BacklogReading {
  readonly #read: (() => Promise<number>) | null;
  #latest: { ms: number; at: number } | null = null;
  #reading = false;

  constructor(read: (() => Promise<number>) | null) {
    this.#read = read;
  }

  /** The latest reading while it is trusted; else 0. */
  trusted(): number {
    const latest = this.#latest;
    return latest && performance.now() - latest.at <= BACKLOG_TRUST_MS ? latest.ms : 0;
  }

  /** Reads the backlog again in the background, unless read within BACKLOG_SAMPLE_MS or on its way. */
  sample(): void {
    const read = this.#read;
    const last = this.#latest;
    if (!read || this.#reading || (last && performance.now() - last.at < BACKLOG_SAMPLE_MS)) return;
    this.#reading = true;
    read()
      .then((ms) => {
        this.#latest = { ms, at: performance.now() };
      })
      .catch(() => {
        // Not known: the reading before it runs out after BACKLOG_TRUST_MS, and the next request reads again.
      })
      .finally(() => {
        this.#reading = false;
      });
  }
}
