// Owns the job queue: background work stored as rows, enqueued in the transaction of the change that
// asks for it (so it exists exactly when the change committed). Workers take due jobs with FOR UPDATE
// SKIP LOCKED and a lease: any number of worker processes can share one database, and a job whose
// worker died is taken again once its lease runs out. Times come from the service clock.
import type { Insertable, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Static, TSchema } from 'typebox';
import type { Database } from '../platform/db/database.ts';
import { type LiteralValue, valuesForCommit } from '../platform/db/sent-with-commit.ts';
import type { JobsTable } from '../platform/db/tables.ts';
import { afterCommit, asOperator, type Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import { checkedPayload, type JobKind } from './kind.ts';

export type JobRow = Selectable<JobsTable>;

/** The NOTIFY channel on which a commit that queued jobs wakes the workers of other processes. */
export const JOBS_CHANNEL = 'practice_billing_jobs';

const inProcessWorkers = new Set<() => void>();

/** Calls wake whenever this process commits a transaction that queued a job; returns how to stop. */
export function onJobsQueued(wake: () => void): () => void {
  inProcessWorkers.add(wake);
  return () => inProcessWorkers.delete(wake);
}

// One NOTIFY at a time per database, and one more for everything queued while it was on its way.
const notifying = new WeakMap<Database, { again: boolean }>();

function notifyOtherProcesses(db: Database): void {
  const current = notifying.get(db);
  if (current) {
    current.again = true;
    return;
  }
  const state = { again: false };
  notifying.set(db, state);
  sql`SELECT pg_notify(${JOBS_CHANNEL}, '')`
    .execute(db.kysely)
    .catch(() => {})
    .finally(() => {
      notifying.delete(db);
      if (state.again) notifyOtherProcesses(db);
    });
}

/**
 * After the commit (never inside the transaction, so no worker looks before the job is visible):
 * wakes this process's worker, or, when this process runs none, the workers listening on PostgreSQL.
 */
function jobsQueued(db: Database): void {
  if (inProcessWorkers.size > 0) {
    for (const wake of inProcessWorkers) wake();
  } else if (db.kind === 'postgres') {
    notifyOtherProcesses(db);
  }
}

/**
 * The row of a new job, its payload checked against its kind, for a caller that inserts it in a
 * statement of its own (several jobs, or jobs with the rows they work on); that caller then calls
 * announceQueuedJobs in the same transaction.
 */
export function newJobRow<S extends TSchema>(
  practiceId: string,
  kind: JobKind<S>,
  payload: Static<S>,
  runAt: Date,
  now: Date,
): Insertable<JobsTable> & { id: string } {
  checkedPayload(kind, payload);
  return {
    practice_id: practiceId,
    id: newId('job'),
    kind: kind.name,
    payload: JSON.stringify(payload),
    run_at: runAt,
    created_at: now,
    locked_by: null,
    locked_until: null,
    last_error: null,
    finished_at: null,
  };
}

/** Wakes the workers once this transaction, which inserted job rows, has committed. */
export function announceQueuedJobs(trx: Trx): void {
  afterCommit(trx, jobsQueued);
}

export async function enqueueJob<S extends TSchema>(
  trx: Trx,
  practiceId: string,
  kind: JobKind<S>,
  payload: Static<S>,
  runAt: Date,
  now: Date,
): Promise<string> {
  const row = newJobRow(practiceId, kind, payload, runAt, now);
  await trx.insertInto('jobs').values(row).execute();
  announceQueuedJobs(trx);
  return row.id;
}

/** Takes up to `limit` due jobs for this worker, leasing them until now + leaseMs. */
export async function takeDueJobs(
  db: Database,
  workerId: string,
  now: Date,
  limit: number,
  leaseMs: number,
): Promise<JobRow[]> {
  return asOperator(db, async (trx) => {
    const result = await sql<JobRow>`
      UPDATE jobs AS j SET locked_by = ${workerId}, locked_until = ${new Date(now.getTime() + leaseMs)},
             attempts = j.attempts + 1
        FROM (SELECT practice_id, id FROM jobs
               WHERE state = 'queued' AND run_at <= ${now} AND (locked_until IS NULL OR locked_until <= ${now})
               ORDER BY run_at, id
               LIMIT ${limit}
               FOR UPDATE SKIP LOCKED) AS due
       WHERE j.practice_id = due.practice_id AND j.id = due.id
       RETURNING j.*`.execute(trx);
    return result.rows;
  });
}

/**
 * Changes a job while this worker holds it (its lease not lost, the job still queued; otherwise
 * nothing), as the last write of the transaction of its work: no answer is read, so on PostgreSQL it
 * goes with the COMMIT.
 */
async function changeHeldJob(
  trx: Trx,
  job: JobRow,
  change: { state?: 'done'; finished_at?: Date; run_at?: Date; locked_by?: null; last_error?: string },
): Promise<void> {
  const set = valuesForCommit({ ...change, locked_until: null } as Record<string, LiteralValue>);
  // Ids, never text with a NUL: always literals.
  const held = valuesForCommit({ practiceId: job.practice_id, id: job.id, lockedBy: job.locked_by });
  await trx
    .updateTable('jobs')
    .set(set.values)
    .where('practice_id', '=', held.values.practiceId)
    .where('id', '=', held.values.id)
    .where('locked_by', '=', held.values.lockedBy)
    .where('state', '=', sql.lit('queued'))
    .modifyEnd(set.end)
    .execute();
}

/** Marks a job done inside the transaction of its work (nothing, should its lease have been lost meanwhile). */
export async function finishJob(trx: Trx, job: JobRow, now: Date): Promise<void> {
  await changeHeldJob(trx, job, { state: 'done', finished_at: now });
}

/** Puts a job back in the queue for later, in a transaction of its own (its work's was undone). */
export async function retryJob(db: Database, job: JobRow, runAt: Date, error: string): Promise<void> {
  await asOperator(db, (trx) => rescheduleJob(trx, job, runAt, error));
}

export async function failJob(db: Database, job: JobRow, now: Date, error: string): Promise<void> {
  await asOperator(db, (trx) =>
    trx
      .updateTable('jobs')
      .set({ state: 'failed', finished_at: now, locked_until: null, last_error: error.slice(0, 2000) })
      .where('practice_id', '=', job.practice_id)
      .where('id', '=', job.id)
      .where('locked_by', '=', job.locked_by)
      .execute(),
  );
}

/** Puts a job back in the queue for later, inside the transaction that recorded why. */
export async function rescheduleJob(trx: Trx, job: JobRow, runAt: Date, error: string): Promise<void> {
  await changeHeldJob(trx, job, { run_at: runAt, locked_by: null, last_error: error.slice(0, 2000) });
}
