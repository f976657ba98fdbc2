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

/** What a lane's poller is given: the lane, its limits, how to take its due jobs and how to run one. */
interface LaneOptions {
  lane: JobLane;
  limits: LaneLimits;
  settings: Pick<LaneSettings, 'jobPollMs' | 'jobPollMaxMs'>;
  take: (limit: number) => Promise<TakeAnswer>;
  run: (job: JobRow) => Promise<void>;
  log: FastifyBaseLogger;
}

/**
 * Keeps up to `limits.concurrency` jobs of the lane running, taking more as soon as a slot frees, so one
 * slow job never holds up the rest of the lane.
 */
export function pollLane(options: LaneOptions): LanePoller {
  return new PolledLane(options);
}

class PolledLane implements LanePoller {
  readonly #options: LaneOptions;
  readonly #inFlight = new Set<Promise<void>>();
  // Slots held for follow-on jobs whose transaction has not committed yet.
  #reserved = 0;
  // Slots a take on its way may fill: not to be held for a follow-on meanwhile.
  #taking = 0;
  #stopped = false;
  #wake: (() => void) | undefined;
  // A signal that arrives while the loop is taking jobs must not be lost: it makes the loop look again.
  #signalled = false;
  #idleMs: number;
  // Whether the latest take filled every free slot: then more may be due than it took.
  #lastTakeFull = false;
  // Whether the latest take left a due job behind a key's cap: a job of that key ending may free it.
  #lastTakeHeldBack = false;
  readonly #loop: Promise<void>;

  constructor(options: LaneOptions) {
    this.#options = options;
    this.#idleMs = options.settings.jobPollMs;
    this.#loop = this.#keepSlotsFull();
  }

  signal(): void {
    this.#signalled = true;
    this.#idleMs = this.#options.settings.jobPollMs;
    this.#wake?.();
  }

  get running(): number {
    return this.#inFlight.size;
  }

  reserve(): boolean {
    const busy = this.#inFlight.size + this.#reserved + this.#taking;
    if (this.#stopped || busy >= this.#options.limits.concurrency) return false;
    this.#reserved += 1;
    return true;
  }

  release(): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
  }

  adopt(job: JobRow): Promise<void> | undefined {
    this.#reserved = Math.max(0, this.#reserved - 1);
    return this.#stopped ? undefined : this.#start(job);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  #start(job: JobRow): Promise<void> {
    const run: Promise<void> = this.#options.run(job).finally(() => {
      this.#inFlight.delete(run);
      // A slot freed: look again at once when more may be due (the latest take filled its slots) or a
      // key's cap held a job back and a keyed job ended, also when this lands while a take is on its
      // way (no wake to call then). Otherwise nothing was left when the lane last looked, and a job
      // queued since signals it (its take then says whether a cap holds it back).
      if (this.#lastTakeFull || (this.#lastTakeHeldBack && job.concurrency_key !== '')) {
        this.#signalled = true;
        this.#wake?.();
      }
    });
    this.#inFlight.add(run);
    return run;
  }

  async #keepSlotsFull(): Promise<void> {
    const { settings } = this.#options;
    while (!this.#stopped) {
      const free = this.#options.limits.concurrency - this.#inFlight.size - this.#reserved;
      const taken = free > 0 ? await this.#takeAndStart(free) : 0;
      if (this.#stopped || (free > 0 && taken === free) || (this.#signalled && free > 0)) continue;
      // A take that found nothing makes the next wait longer, up to the bound; one that found jobs, or
      // a signal, brings it back to JOB_POLL_MS.
      if (taken > 0) this.#idleMs = settings.jobPollMs;
      const waitMs = this.#idleMs;
      if (free > 0 && taken === 0) this.#idleMs = Math.min(this.#idleMs * 2, settings.jobPollMaxMs);
      await this.#waitForWork(waitMs);
    }
    await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Takes up to `free` due jobs and starts them in the same turn as the take's answer, so that no
   * follow-on is given a slot a taken job is about to fill; answers how many it took (none when the
   * take failed: the next turn tries again).
   */
  async #takeAndStart(free: number): Promise<number> {
    this.#signalled = false;
    this.#taking = free;
    let taken: JobRow[] = [];
    try {
      const answer = await this.#options.take(free);
      taken = answer.jobs;
      this.#lastTakeHeldBack = answer.heldBack;
    } catch (err) {
      this.#options.log.warn({ err, lane: this.#options.lane }, 'taking jobs failed; will retry');
      // Unknown: a keyed job ending looks again, as if a cap held one back.
      this.#lastTakeHeldBack = true;
    } finally {
      this.#taking = 0;
    }
    this.#lastTakeFull = taken.length === free;
    for (const job of taken) this.#start(job);
    return taken.length;
  }

  /** Nothing more is due, or every slot is busy: waits for the poll, a signal or a finished job. */
  async #waitForWork(waitMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = undefined;
  }
}
