// Owns what a job is handed before it runs, so that it need not read it again in a transaction of its
// own: what the transaction that queued a follow-on job knew of it (src/jobs/follow-on.ts), or what its
// kind read for it in the transaction that took it (a TakenJobsPreparer). Held in this process's
// memory by the job's row object; a job handed nothing reads for itself.
import type { Trx } from '../platform/db/transaction.ts';
import type { JobRow } from './job-row.ts';

const handedOver = new WeakMap<JobRow, unknown>();

export function handOver(job: JobRow, what: unknown): void {
  handedOver.set(job, what);
}

/** What was handed over with the job; undefined when nothing was. */
export function handedOverWith(job: JobRow): unknown {
  return handedOver.get(job);
}

/**
 * For the jobs of one kind a take leased: reads, in the take's transaction (the operator role, one
 * statement per practice), what they need to run, and hands it over (handOver). A job it hands nothing
 * (say its record changed meanwhile) reads for itself, as before. A failure fails the take.
 */
export type TakenJobsPreparer = (trx: Trx, jobs: readonly JobRow[]) => Promise<void>;
