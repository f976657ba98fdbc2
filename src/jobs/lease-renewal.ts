// Owns renewing the leases of the jobs one worker is running: every third of the lease, one statement
// renews them all (src/jobs/queue.ts renewLeases), so a job may run longer than its lease. A job whose
// lease was not renewed (another worker took it once it ran out, or it ended) is renewed no more.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../platform/db/database.ts';
import { type JobRow, jobKey, renewLeases } from './queue.ts';

export class LeaseRenewal {
  // The jobs this worker is running, by jobKey: their leases are renewed until they end.
  readonly #held = new Map<string, JobRow>();
  #renewing: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout;
  readonly #db: Database;
  readonly #workerId: string;
  readonly #leaseMs: number;
  readonly #log: FastifyBaseLogger;

  constructor(db: Database, workerId: string, leaseMs: number, log: FastifyBaseLogger) {
    this.#db = db;
    this.#workerId = workerId;
    this.#leaseMs = leaseMs;
    this.#log = log;
    this.#timer = setInterval(() => this.#renew(), Math.max(Math.floor(leaseMs / 3), 1));
    this.#timer.unref();
  }

  /** The job is running here: its lease is renewed until `end`. */
  hold(job: JobRow): void {
    this.#held.set(jobKey(job), job);
  }

  /** The job has ended here: its lease is renewed no more. */
  end(job: JobRow): void {
    const key = jobKey(job);
    if (this.#held.get(key) === job) this.#held.delete(key);
  }

  /** Renews nothing more; settles once a renewal on its way has. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#renewing;
  }

  #renew(): void {
    if (this.#renewing || this.#held.size === 0) return;
    const jobs = [...this.#held.values()];
    this.#renewing = renewLeases(this.#db, this.#workerId, jobs, this.#leaseMs)
      .then((renewed) => {
        for (const job of jobs) {
          const key = jobKey(job);
          if (this.#held.get(key) !== job || renewed.has(key)) continue;
          // Taken by another worker, or ended (by this worker too, just now): renewed no more. Whether
          // the lease was lost is told for sure when the job's end is recorded, which then fails.
          this.#held.delete(key);
          this.#log.debug(
            { job: job.id, kind: job.kind },
            'job lease not renewed: another worker has it, or it ended',
          );
        }
      })
      .catch((err) => this.#log.warn({ err }, 'renewing job leases failed; will retry'))
      .finally(() => {
        this.#renewing = undefined;
      });
  }
}
