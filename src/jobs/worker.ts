// Owns the worker loop: it takes due jobs from the queue and runs each with the handler of its kind
// (a bounded number at a time in each lane, src/jobs/lanes.ts), and runs periodic tasks on their
// schedules; which kinds and tasks exist is the composition root's (src/job-catalogue.ts). A lane
// wakes when a commit of this process queued a job in it, or on a NOTIFY from another process's
// commit, and polls besides, with backoff while nothing comes, for jobs that fall due later. A job
// that throws is retried with backoff, up to a limit. While a job runs, its lease is renewed every
// third of the lease (on the database's clock, src/jobs/lease-renewal.ts), so a job may run longer
// than its lease; a worker that dies leaves its jobs to be taken again when their lease runs out, and
// one that lost a lease learns it and records nothing of that job. Any number of workers can share one
// database, whatever their clocks say; each should have its own pool (WORKER_DATABASE_POOL_SIZE).
// Each run is logged at its start and end, counted by kind and outcome, and traced as a span that
// continues the trace of the work that queued the job (src/platform/observability/).
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { randomToken } from '../platform/ids.ts';
import { type JobOutcome, observeJob } from '../platform/observability/metrics.ts';
import { inSpan, PRACTICE_ID } from '../platform/observability/spans.ts';
import { type FollowOnRunner, runWithFollowOns } from './follow-on.ts';
import type { TakenJobsPreparer } from './handoff.ts';
import { JobPayloadError } from './kind.ts';
import {
  isJobLane,
  JOB_LANES,
  type JobLane,
  type LanePoller,
  type LaneSettings,
  laneLimits,
  pollLane,
} from './lanes.ts';
import { LeaseRenewal } from './lease-renewal.ts';
import {
  batchedTakes,
  failJob,
  isJobLeaseLost,
  JOBS_CHANNEL,
  type JobRow,
  onJobsQueued,
  releaseJob,
  retryJob,
  takeDueJobs,
  wasRescheduled,
} from './queue.ts';

export interface WorkerDeps {
  db: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  settings: LaneSettings & { jobLeaseSeconds: number };
}

export type JobHandler = (job: JobRow) => Promise<void>;

const MAX_ATTEMPTS = 20;

/** A job's span: the messaging conventions' process operation on its lane, with the job's ids. */
function jobSpanAttributes(job: JobRow) {
  return {
    'messaging.system': 'practice_billing_jobs',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': job.lane,
    'messaging.message.id': job.id,
    'practice_billing.job.kind': job.kind,
    'practice_billing.job.attempt': job.attempts,
    [PRACTICE_ID]: job.practice_id,
  };
}

/** What a periodic task runs with. */
export interface TaskDeps {
  db: Database;
  clock: Clock;
}

export interface PeriodicTask {
  name: string;
  everyMs: number;
  run(deps: TaskDeps): Promise<number>;
}

export interface Worker {
  /**
   * Takes and runs due jobs until none is left, waiting for follow-on jobs as takeOnce (tests use it to
   * drive the queue deterministically).
   */
  drain(): Promise<number>;
  /**
   * One take from every lane: runs what it took and waits for every follow-on job running meanwhile
   * (theirs, and with polling lanes any other); answers how many ran.
   */
  takeOnce(): Promise<number>;
  stop(): Promise<void>;
}

/** What a worker runs, and how it is started. */
interface WorkerOptions {
  handlers: Record<string, JobHandler>;
  preparers?: Record<string, TakenJobsPreparer>;
  tasks: PeriodicTask[];
  poll?: boolean;
  onStop?: () => Promise<void>;
}

/**
 * Starts a worker running `handlers` by job kind and `tasks` on their schedules; `preparers` read, in
 * the take's transaction, what jobs of their kind need (src/jobs/handoff.ts); `onStop` releases what
 * the handlers hold (the webhook sender's connections).
 */
export function startWorker(deps: WorkerDeps, options: WorkerOptions): Worker {
  return new JobWorker(deps, options);
}

class JobWorker implements Worker {
  readonly #deps: WorkerDeps;
  readonly #options: WorkerOptions;
  readonly #workerId = `wrk_${randomToken(8)}`;
  readonly #leaseMs: number;
  #stopped = false;
  /** Periodic tasks running, and follow-on jobs being given back: stop() waits for them. */
  readonly #running = new Set<Promise<unknown>>();
  readonly #leases: LeaseRenewal;
  // Jobs with a concurrency key running (or held for) in this worker, per key: a follow-on job is this
  // worker's only while its key is below the lane's cap here (and in the database: its insert asks).
  readonly #keyed = new Map<string, number>();
  // Follow-on jobs running, in a lane's slot or (no lanes) on their own: drain() and takeOnce() wait
  // for them; and every follow-on job handed to this worker whose key reserve already counted.
  readonly #followOns = new Set<Promise<void>>();
  #followOnsRun = 0;
  readonly #adopted = new WeakSet<JobRow>();
  readonly #followOnRunner: FollowOnRunner;
  // The lanes' takes of one turn share a transaction (a commit that queued jobs of both wakes both).
  readonly #takeBatched: ReturnType<typeof batchedTakes>;
  // Each lane keeps its own slots full (src/jobs/lanes.ts); a commit that queued a job wakes its lane.
  readonly #lanes = new Map<JobLane, LanePoller>();
  readonly #unsubscribe: Array<() => unknown> = [];
  readonly #timers: NodeJS.Timeout[];

  constructor(deps: WorkerDeps, options: WorkerOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#leaseMs = deps.settings.jobLeaseSeconds * 1000;
    this.#leases = new LeaseRenewal(deps.db, this.#workerId, this.#leaseMs, deps.log);
    this.#followOnRunner = this.#runnerOfFollowOns();
    this.#takeBatched = batchedTakes(deps.db, this.#workerId, this.#leaseMs, this.#prepare);
    if (options.poll !== false) this.#startLanes();
    this.#timers = options.tasks.map((task) => this.#schedule(task));
  }

  async drain(): Promise<number> {
    const followedBefore = this.#followOnsRun;
    let total = 0;
    for (;;) {
      const taken = await this.#takeAndRun();
      total += taken;
      if (taken === 0) return total + this.#followOnsRun - followedBefore;
    }
  }

  async takeOnce(): Promise<number> {
    const followedBefore = this.#followOnsRun;
    return (await this.#takeAndRun()) + this.#followOnsRun - followedBefore;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#unsubscribe.map((stop) => stop()));
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.all([...this.#lanes.values()].map((poller) => poller.stop()));
    await this.#leases.stop();
    await Promise.allSettled([...this.#running]);
    await this.#options.onStop?.();
  }

  #countKey(key: string, by: number): void {
    if (key === '') return;
    const n = (this.#keyed.get(key) ?? 0) + by;
    if (n > 0) this.#keyed.set(key, n);
    else this.#keyed.delete(key);
  }

  /** How follow-on jobs (src/jobs/follow-on.ts) get a slot of this worker, and run in it. */
  #runnerOfFollowOns(): FollowOnRunner {
    const config = this.#deps.settings;
    return {
      workerId: this.#workerId,
      leaseMs: this.#leaseMs,
      keyCap: (lane) => laneLimits(config, lane).keyCap,
      practiceCap: (lane) => laneLimits(config, lane).practiceCap,
      reserve: (lane, key) => this.#reserveFollowOn(lane, key),
      release: (lane, key) => {
        this.#countKey(key, -1);
        this.#lanes.get(lane)?.release();
      },
      run: (job) => this.#runFollowOn(job),
    };
  }

  #reserveFollowOn(lane: JobLane, key: string): boolean {
    if (this.#stopped) return false;
    const { keyCap: cap, practiceCap } = laneLimits(this.#deps.settings, lane);
    if (key !== '' && cap !== null && (this.#keyed.get(key) ?? 0) >= cap) return false;
    // A follow-on under a cap is leased by its insert only if the insert's count finds room, which
    // Citus refuses in an INSERT (a subquery in VALUES): there such a job is queued for a take.
    if (this.#deps.db.distributed && ((key !== '' && cap !== null) || practiceCap !== null)) return false;
    const poller = this.#lanes.get(lane);
    if (poller && !poller.reserve()) return false;
    this.#countKey(key, 1);
    return true;
  }

  #runFollowOn(job: JobRow): void {
    this.#adopted.add(job);
    const lane = isJobLane(job.lane) ? job.lane : undefined;
    const poller = lane && this.#lanes.get(lane);
    const started = poller ? poller.adopt(job) : this.#runJob(job);
    if (!started) {
      // Its lane has stopped: the lease goes back, so that another worker takes it at its next take
      // rather than once the lease runs out.
      this.#adopted.delete(job);
      this.#countKey(job.concurrency_key, -1);
      const release: Promise<void> = releaseJob(this.#deps.db, job)
        .catch((err) => this.#deps.log.warn({ err, job: job.id }, 'giving back a follow-on job failed'))
        .finally(() => this.#running.delete(release));
      this.#running.add(release);
      return;
    }
    this.#followOnsRun += 1;
    const run: Promise<void> = started.finally(() => this.#followOns.delete(run));
    this.#followOns.add(run);
  }

  /** Runs the job's handler; answers how it ended (a throw is recorded here: a retry or the end). */
  async #handle(job: JobRow): Promise<JobOutcome> {
    const handler = this.#options.handlers[job.kind];
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      await runWithFollowOns(this.#followOnRunner, () => handler(job));
      // A handler may give the job back itself (a failed delivery attempt, an insurer not answering).
      return wasRescheduled(job) ? 'retry' : 'done';
    } catch (err) {
      return this.#recordThrow(job, err, handler !== undefined);
    }
  }

  /** A job whose handler threw: nothing when its lease was lost, else retried with backoff or failed for good. */
  async #recordThrow(job: JobRow, err: unknown, handled: boolean): Promise<JobOutcome> {
    const { db, log, clock } = this.#deps;
    if (isJobLeaseLost(err)) {
      log.warn(
        { job: job.id, kind: job.kind },
        'job lease lost; another worker has the job, nothing recorded',
      );
      return 'lease_lost';
    }
    const now = clock.now();
    const message = err instanceof Error ? err.message : String(err);
    if (job.attempts >= MAX_ATTEMPTS || !handled || err instanceof JobPayloadError) {
      log.error({ err, job: job.id, kind: job.kind }, 'job failed for good');
      await failJob(db, job, now, message).catch(() => {});
      return 'failed';
    }
    log.warn({ err, job: job.id, kind: job.kind }, 'job failed; will retry');
    const delay = Math.min(2 ** job.attempts * 1000, 10 * 60 * 1000);
    await retryJob(db, job, delay, message).catch(() => {});
    return 'retry';
  }

  async #runJob(job: JobRow): Promise<void> {
    const { log } = this.#deps;
    this.#leases.hold(job);
    // A follow-on job's key was counted when its slot was held.
    if (!this.#adopted.delete(job)) this.#countKey(job.concurrency_key, 1);
    const about = { job: job.id, kind: job.kind, practiceId: job.practice_id, attempt: job.attempts };
    const started = performance.now();
    log.info(about, 'job started');
    try {
      // The job continues the trace of the work that queued it (its row's traceparent).
      const outcome = await inSpan(`${job.kind} process`, jobSpanAttributes(job), () => this.#handle(job), {
        role: 'consumer',
        traceparent: job.trace_context,
      });
      const seconds = (performance.now() - started) / 1000;
      observeJob(job.kind, outcome, seconds);
      log.info({ ...about, outcome, durationMs: Math.round(seconds * 1000) }, 'job ended');
    } finally {
      this.#countKey(job.concurrency_key, -1);
      this.#leases.end(job);
    }
  }

  /** What the preparers read for the jobs of their kind, in the take's transaction. */
  readonly #prepare: TakenJobsPreparer = async (trx, jobs) => {
    for (const [kind, prepareKind] of Object.entries(this.#options.preparers ?? {})) {
      const ofKind = jobs.filter((job) => job.kind === kind);
      if (ofKind.length > 0) await prepareKind(trx, ofKind);
    }
  };

  // drain() takes from every lane in one statement, as many as all lanes' slots, each key capped.
  async #takeAndRun(): Promise<number> {
    const config = this.#deps.settings;
    const limit = JOB_LANES.reduce((sum, lane) => sum + laneLimits(config, lane).concurrency, 0);
    const { keyCap, practiceCap } = laneLimits(config, 'webhooks');
    const options = { keyCap, practiceCap, prepare: this.#prepare };
    const jobs = await takeDueJobs(this.#deps.db, this.#workerId, limit, this.#leaseMs, options);
    await Promise.all(jobs.map((job) => this.#runJob(job)));
    while (this.#followOns.size > 0) await Promise.allSettled([...this.#followOns]);
    return jobs.length;
  }

  /** A poller for each lane (none for webhooks while deliveries are held), woken by commits that queue jobs. */
  #startLanes(): void {
    const { settings: config, log, db } = this.#deps;
    for (const lane of JOB_LANES) {
      if (lane === 'webhooks' && config.deliveriesHeld) {
        log.warn(
          'webhook deliveries are held (DELIVERIES_HELD=true): they are queued and kept, and sent once a worker starts without it',
        );
        continue;
      }
      const limits = laneLimits(config, lane);
      const take = (limit: number) =>
        this.#takeBatched({ lanes: [lane], limit, keyCap: limits.keyCap, practiceCap: limits.practiceCap });
      const run = (job: JobRow) => this.#runJob(job);
      this.#lanes.set(lane, pollLane({ lane, limits, settings: config, take, run, log }));
    }
    const signal = (lane: unknown) => {
      if (isJobLane(lane)) this.#lanes.get(lane)?.signal();
      else for (const poller of this.#lanes.values()) poller.signal();
    };
    this.#unsubscribe.push(onJobsQueued(signal));
    if (db.listen) this.#unsubscribe.push(db.listen(JOBS_CHANNEL, signal));
  }

  /** Runs a periodic task every `everyMs` (and at once when the worker polls); stop() waits for a run. */
  #schedule(task: PeriodicTask): NodeJS.Timeout {
    const { log } = this.#deps;
    const tick = () => {
      if (this.#stopped) return;
      const run = task
        .run(this.#deps)
        .then((count) => {
          if (count > 0) log.info({ task: task.name, count }, 'background task done');
        })
        .catch((err) => log.warn({ err, task: task.name }, 'background task failed; will retry'))
        .finally(() => this.#running.delete(run));
      this.#running.add(run);
    };
    if (this.#options.poll !== false) setImmediate(tick);
    return setInterval(tick, task.everyMs);
  }
}
