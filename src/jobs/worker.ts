// Owns the worker loop: it takes due jobs from the queue and runs each with the handler of its kind
// (a bounded number at a time in each lane, src/jobs/lanes.ts), and runs periodic tasks on their
// schedules; which kinds and tasks exist is the composition root's (src/job-catalogue.ts). A lane
// wakes when a commit of this process queued a job in it, or on a NOTIFY from another process's
// commit, and polls besides, with backoff while nothing comes, for jobs that fall due later. A job
// that throws is retried with backoff, up to a limit. While a job runs, its lease is renewed every
// third of the lease (on the database's clock, src/jobs/queue.ts), so a job may run longer than its
// lease; a worker that dies leaves its jobs to be taken again when their lease runs out, and one that
// lost a lease learns it and records nothing of that job. Any number of workers can share one
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
import {
  batchedTakes,
  failJob,
  isJobLeaseLost,
  JOBS_CHANNEL,
  type JobRow,
  jobKey,
  onJobsQueued,
  releaseJob,
  renewLeases,
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

/**
 * Starts a worker running `handlers` by job kind and `tasks` on their schedules; `preparers` read, in
 * the take's transaction, what jobs of their kind need (src/jobs/handoff.ts); `onStop` releases what
 * the handlers hold (the webhook sender's connections).
 */
export function startWorker(
  deps: WorkerDeps,
  options: {
    handlers: Record<string, JobHandler>;
    preparers?: Record<string, TakenJobsPreparer>;
    tasks: PeriodicTask[];
    poll?: boolean;
    onStop?: () => Promise<void>;
  },
): Worker {
  const workerId = `wrk_${randomToken(8)}`;
  const { handlers } = options;
  const { settings: config, log } = deps;
  let stopped = false;
  const running = new Set<Promise<unknown>>();

  const leaseMs = config.jobLeaseSeconds * 1000;
  // The jobs this worker is running, by jobKey: their leases are renewed until they end.
  const held = new Map<string, JobRow>();
  let renewing: Promise<void> | undefined;
  const renew = () => {
    if (renewing || held.size === 0) return;
    const jobs = [...held.values()];
    renewing = renewLeases(deps.db, workerId, jobs, leaseMs)
      .then((renewed) => {
        for (const job of jobs) {
          const key = jobKey(job);
          if (held.get(key) !== job || renewed.has(key)) continue;
          // Taken by another worker, or ended (by this worker too, just now): renewed no more. Whether
          // the lease was lost is told for sure when the job's end is recorded, which then fails.
          held.delete(key);
          log.debug(
            { job: job.id, kind: job.kind },
            'job lease not renewed: another worker has it, or it ended',
          );
        }
      })
      .catch((err) => log.warn({ err }, 'renewing job leases failed; will retry'))
      .finally(() => {
        renewing = undefined;
      });
  };
  const renewal = setInterval(renew, Math.max(Math.floor(leaseMs / 3), 1));
  renewal.unref();

  // Jobs with a concurrency key running (or held for) in this worker, per key: a follow-on job is this
  // worker's only while its key is below the lane's cap here (and in the database: its insert asks).
  const keyed = new Map<string, number>();
  const countKey = (k: string, by: number) => {
    if (k === '') return;
    const n = (keyed.get(k) ?? 0) + by;
    if (n > 0) keyed.set(k, n);
    else keyed.delete(k);
  };
  // Follow-on jobs running, in a lane's slot or (no lanes) on their own: drain() and takeOnce() wait
  // for them; and every follow-on job handed to this worker whose key reserve already counted.
  const followOns = new Set<Promise<void>>();
  let followOnsRun = 0;
  const adopted = new WeakSet<JobRow>();
  const followOnRunner: FollowOnRunner = {
    workerId,
    leaseMs,
    keyCap: (lane) => laneLimits(config, lane).keyCap,
    practiceCap: (lane) => laneLimits(config, lane).practiceCap,
    reserve(lane, k) {
      if (stopped) return false;
      const { keyCap: cap, practiceCap } = laneLimits(config, lane);
      if (k !== '' && cap !== null && (keyed.get(k) ?? 0) >= cap) return false;
      // A follow-on under a cap is leased by its insert only if the insert's count finds room, which
      // Citus refuses in an INSERT (a subquery in VALUES): there such a job is queued for a take.
      if (deps.db.distributed && ((k !== '' && cap !== null) || practiceCap !== null)) return false;
      const poller = lanes.get(lane);
      if (poller && !poller.reserve()) return false;
      countKey(k, 1);
      return true;
    },
    release(lane, k) {
      countKey(k, -1);
      lanes.get(lane)?.release();
    },
    run(job) {
      adopted.add(job);
      const lane = isJobLane(job.lane) ? job.lane : undefined;
      const poller = lane && lanes.get(lane);
      const started = poller ? poller.adopt(job) : runJob(job);
      if (!started) {
        // Its lane has stopped: the lease goes back, so that another worker takes it at its next take
        // rather than once the lease runs out.
        adopted.delete(job);
        countKey(job.concurrency_key, -1);
        const release: Promise<void> = releaseJob(deps.db, job)
          .catch((err) => log.warn({ err, job: job.id }, 'giving back a follow-on job failed'))
          .finally(() => running.delete(release));
        running.add(release);
        return;
      }
      followOnsRun += 1;
      const run: Promise<void> = started.finally(() => followOns.delete(run));
      followOns.add(run);
    },
  };

  /** Runs the job's handler; answers how it ended (a throw is recorded here: a retry or the end). */
  const handle = async (job: JobRow): Promise<JobOutcome> => {
    const handler = handlers[job.kind];
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      await runWithFollowOns(followOnRunner, () => handler(job));
      // A handler may give the job back itself (a failed delivery attempt, an insurer not answering).
      return wasRescheduled(job) ? 'retry' : 'done';
    } catch (err) {
      if (isJobLeaseLost(err)) {
        log.warn(
          { job: job.id, kind: job.kind },
          'job lease lost; another worker has the job, nothing recorded',
        );
        return 'lease_lost';
      }
      const now = deps.clock.now();
      const message = err instanceof Error ? err.message : String(err);
      if (job.attempts >= MAX_ATTEMPTS || !handler || err instanceof JobPayloadError) {
        log.error({ err, job: job.id, kind: job.kind }, 'job failed for good');
        await failJob(deps.db, job, now, message).catch(() => {});
        return 'failed';
      }
      log.warn({ err, job: job.id, kind: job.kind }, 'job failed; will retry');
      const delay = Math.min(2 ** job.attempts * 1000, 10 * 60 * 1000);
      await retryJob(deps.db, job, delay, message).catch(() => {});
      return 'retry';
    }
  };

  const runJob = async (job: JobRow) => {
    const key = jobKey(job);
    held.set(key, job);
    // A follow-on job's key was counted when its slot was held.
    if (!adopted.delete(job)) countKey(job.concurrency_key, 1);
    const about = { job: job.id, kind: job.kind, practiceId: job.practice_id, attempt: job.attempts };
    const started = performance.now();
    log.info(about, 'job started');
    try {
      // The job continues the trace of the work that queued it (its row's traceparent).
      const outcome = await inSpan(`${job.kind} process`, jobSpanAttributes(job), () => handle(job), {
        role: 'consumer',
        traceparent: job.trace_context,
      });
      const seconds = (performance.now() - started) / 1000;
      observeJob(job.kind, outcome, seconds);
      log.info({ ...about, outcome, durationMs: Math.round(seconds * 1000) }, 'job ended');
    } finally {
      countKey(job.concurrency_key, -1);
      if (held.get(key) === job) held.delete(key);
    }
  };
  const settleFollowOns = async () => {
    while (followOns.size > 0) await Promise.allSettled([...followOns]);
  };

  const preparers = options.preparers ?? {};
  const prepare: TakenJobsPreparer = async (trx, jobs) => {
    for (const [kind, prepareKind] of Object.entries(preparers)) {
      const ofKind = jobs.filter((job) => job.kind === kind);
      if (ofKind.length > 0) await prepareKind(trx, ofKind);
    }
  };
  // The lanes' takes of one turn share a transaction (a commit that queued jobs of both wakes both).
  const takeBatched = batchedTakes(deps.db, workerId, leaseMs, prepare);
  const take = (lane: JobLane, limit: number) =>
    takeBatched({
      lanes: [lane],
      limit,
      keyCap: laneLimits(config, lane).keyCap,
      practiceCap: laneLimits(config, lane).practiceCap,
    });
  // drain() takes from every lane in one statement, as many as all lanes' slots, each key capped.
  const takeAndRun = async (): Promise<number> => {
    const limit = JOB_LANES.reduce((sum, lane) => sum + laneLimits(config, lane).concurrency, 0);
    const { keyCap, practiceCap } = laneLimits(config, 'webhooks');
    const jobs = await takeDueJobs(deps.db, workerId, limit, leaseMs, { keyCap, practiceCap, prepare });
    await Promise.all(jobs.map(runJob));
    await settleFollowOns();
    return jobs.length;
  };

  // Each lane keeps its own slots full (src/jobs/lanes.ts); a commit that queued a job wakes its lane.
  const lanes = new Map<JobLane, LanePoller>();
  const unsubscribe: Array<() => unknown> = [];
  if (options.poll !== false) {
    for (const lane of JOB_LANES) {
      if (lane === 'webhooks' && config.deliveriesHeld) {
        log.warn(
          'webhook deliveries are held (DELIVERIES_HELD=true): they are queued and kept, and sent once a worker starts without it',
        );
        continue;
      }
      const limits = laneLimits(config, lane);
      lanes.set(
        lane,
        pollLane({ lane, limits, settings: config, take: (n) => take(lane, n), run: runJob, log }),
      );
    }
    const signal = (lane: unknown) => {
      if (isJobLane(lane)) lanes.get(lane)?.signal();
      else for (const poller of lanes.values()) poller.signal();
    };
    unsubscribe.push(onJobsQueued(signal));
    if (deps.db.listen) unsubscribe.push(deps.db.listen(JOBS_CHANNEL, signal));
  }

  const timers = options.tasks.map((task) => {
    const tick = () => {
      if (stopped) return;
      const run = task
        .run(deps)
        .then((count) => {
          if (count > 0) log.info({ task: task.name, count }, 'background task done');
        })
        .catch((err) => log.warn({ err, task: task.name }, 'background task failed; will retry'))
        .finally(() => running.delete(run));
      running.add(run);
    };
    if (options.poll !== false) setImmediate(tick);
    return setInterval(tick, task.everyMs);
  });

  return {
    async drain() {
      const followedBefore = followOnsRun;
      let total = 0;
      for (;;) {
        const taken = await takeAndRun();
        total += taken;
        if (taken === 0) return total + followOnsRun - followedBefore;
      }
    },
    async takeOnce() {
      const followedBefore = followOnsRun;
      return (await takeAndRun()) + followOnsRun - followedBefore;
    },
    async stop() {
      stopped = true;
      await Promise.all(unsubscribe.map((stop) => stop()));
      for (const timer of timers) clearInterval(timer);
      await Promise.all([...lanes.values()].map((poller) => poller.stop()));
      clearInterval(renewal);
      await renewing;
      await Promise.allSettled([...running]);
      await options.onStop?.();
    },
  };
}
