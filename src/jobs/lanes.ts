// Owns the job queue's lanes: claim work ('claims': submissions, insurer answers, remittances,
// reversals), webhook deliveries ('webhooks') and e-mails ('mail') each run in slots of their own, so a lane whose slots
// are all held (deliveries waiting 10 seconds on slow receivers) leaves the other free. A job's kind
// names its lane (src/jobs/kind.ts). In the webhooks lane the jobs of one endpoint (their concurrency
// key) are capped at WEBHOOK_ENDPOINT_CONCURRENCY running at once, and the jobs of one practice at
// WEBHOOK_PRACTICE_CONCURRENCY, so a slow endpoint, or one practice's slow endpoints, fill their own
// slots only and other practices' deliveries find slots free. Each lane is polled by a loop of its own (pollLane), woken by a commit that queued a
// job in it (in this process, or by NOTIFY from another) and by a job of its own ending when more may
// be due (its latest take filled its slots, or left a due job behind its key's cap and the job had a
// concurrency key), even one that ends while a take is on its way; a follow-on job
// (src/jobs/follow-on.ts) runs in a slot held for it, never one a take on its way may fill, and one
// handed over once the lane has stopped is not run. When a take finds nothing it polls again after
// JOB_POLL_MS, doubling up to JOB_POLL_MAX_MS while nothing comes. A take that finds nothing because
// the due jobs were locked by another worker's take counts as finding nothing: the statement does not
// tell this apart from an empty lane.
import type { FastifyBaseLogger } from 'fastify';
import type { JobRow } from './job-row.ts';

export const JOB_LANES = ['claims', 'webhooks', 'mail'] as const;
export type JobLane = (typeof JOB_LANES)[number];

export function isJobLane(value: unknown): value is JobLane {
  return (JOB_LANES as readonly unknown[]).includes(value);
}

/** What a take leased, and whether it left due jobs waiting only because their key was at its cap. */
export interface TakeAnswer {
  jobs: JobRow[];
  /**
   * A key's cap held back a due job: one of that key's running jobs ending may free it, so the lane
   * looks again when one does. False when every due job was dealt a slot, or was held back only by
   * the take's limit.
   */
  heldBack: boolean;
}

/** What the lanes are configured by (src/platform/config.ts). */
export interface LaneSettings {
  jobConcurrency: number;
  webhookJobConcurrency: number;
  /** E-mails (patients' accounts, the practice's notices) a worker sends at once (the mail lane). */
  mailJobConcurrency: number;
  webhookEndpointConcurrency: number;
  webhookPracticeConcurrency: number;
  jobPollMs: number;
  jobPollMaxMs: number;
  /** DELIVERIES_HELD: the webhooks lane takes nothing (a restored copy must not deliver by surprise). */
  deliveriesHeld?: boolean;
}

export interface LaneLimits {
  /** Jobs of the lane one worker runs at once. */
  concurrency: number;
  /** Jobs of one concurrency key running at once, in all workers; null for none. */
  keyCap: number | null;
  /** Jobs of one practice running at once, in all workers; null for none. */
  practiceCap: number | null;
}

export function laneLimits(settings: LaneSettings, lane: JobLane): LaneLimits {
  if (lane === 'webhooks') {
    return {
      concurrency: settings.webhookJobConcurrency,
      keyCap: settings.webhookEndpointConcurrency,
      practiceCap: settings.webhookPracticeConcurrency,
    };
  }
  if (lane === 'mail') return { concurrency: settings.mailJobConcurrency, keyCap: null, practiceCap: null };
  return { concurrency: settings.jobConcurrency, keyCap: null, practiceCap: null };
}

export interface LanePoller {
  /** A job was queued in this lane: look now. */
  signal(): void;
  /** Stops taking jobs; settles once the jobs running have ended. */
  stop(): Promise<void>;
  /** Jobs of this lane running now. */
  readonly running: number;
  /** Holds a free slot for a follow-on job about to be queued (src/jobs/follow-on.ts); false when none is free. */
  reserve(): boolean;
  /** Gives back a slot held by reserve. */
  release(): void;
  /**
   * Runs a follow-on job in the slot reserve held for it and answers its run; undefined when the lane
   * has stopped, and the job is not run.
   */
  adopt(job: JobRow): Promise<void> | undefined;
}

/**
 * Keeps up to `limits.concurrency` jobs of the lane running, taking more as soon as a slot frees, so one
 * slow job never holds up the rest of the lane.
 */
export function pollLane(options: {
  lane: JobLane;
  limits: LaneLimits;
  settings: Pick<LaneSettings, 'jobPollMs' | 'jobPollMaxMs'>;
  take: (limit: number) => Promise<TakeAnswer>;
  run: (job: JobRow) => Promise<void>;
  log: FastifyBaseLogger;
}): LanePoller {
  const { lane, limits, settings, log } = options;
  const inFlight = new Set<Promise<void>>();
  // Slots held for follow-on jobs whose transaction has not committed yet.
  let reserved = 0;
  // Slots a take on its way may fill: not to be held for a follow-on meanwhile.
  let taking = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  // A signal that arrives while the loop is taking jobs must not be lost: it makes the loop look again.
  let signalled = false;
  let idleMs = settings.jobPollMs;
  const signal = () => {
    signalled = true;
    idleMs = settings.jobPollMs;
    wake?.();
  };
  // Whether the latest take filled every free slot: then more may be due than it took.
  let lastTakeFull = false;
  // Whether the latest take left a due job behind a key's cap: a job of that key ending may free it.
  let lastTakeHeldBack = false;
  const start = (job: JobRow): Promise<void> => {
    const run: Promise<void> = options.run(job).finally(() => {
      inFlight.delete(run);
      // A slot freed: look again at once when more may be due (the latest take filled its slots) or a
      // key's cap held a job back and a keyed job ended, also when this lands while a take is on its
      // way (no wake to call then). Otherwise nothing was left when the lane last looked, and a job
      // queued since signals it (its take then says whether a cap holds it back).
      if (lastTakeFull || (lastTakeHeldBack && job.concurrency_key !== '')) {
        signalled = true;
        wake?.();
      }
    });
    inFlight.add(run);
    return run;
  };
  const loop = (async () => {
    while (!stopped) {
      const free = limits.concurrency - inFlight.size - reserved;
      let taken: JobRow[] = [];
      if (free > 0) {
        signalled = false;
        taking = free;
        try {
          const answer = await options.take(free);
          taken = answer.jobs;
          lastTakeHeldBack = answer.heldBack;
        } catch (err) {
          log.warn({ err, lane }, 'taking jobs failed; will retry');
          // Unknown: a keyed job ending looks again, as if a cap held one back.
          lastTakeHeldBack = true;
        } finally {
          taking = 0;
        }
      }
      if (free > 0) lastTakeFull = taken.length === free;
      for (const job of taken) start(job);
      if (stopped || (free > 0 && taken.length === free) || (signalled && free > 0)) continue;
      // A take that found nothing makes the next wait longer, up to the bound; one that found jobs, or
      // a signal, brings it back to JOB_POLL_MS.
      if (taken.length > 0) idleMs = settings.jobPollMs;
      const waitMs = idleMs;
      if (free > 0 && taken.length === 0) idleMs = Math.min(idleMs * 2, settings.jobPollMaxMs);
      // Nothing more is due, or every slot is busy: wait for the poll, a signal or a finished job.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
    await Promise.allSettled([...inFlight]);
  })();
  return {
    signal,
    get running() {
      return inFlight.size;
    },
    reserve() {
      if (stopped || inFlight.size + reserved + taking >= limits.concurrency) return false;
      reserved += 1;
      return true;
    },
    release() {
      reserved = Math.max(0, reserved - 1);
    },
    adopt(job) {
      reserved = Math.max(0, reserved - 1);
      return stopped ? undefined : start(job);
    },
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
