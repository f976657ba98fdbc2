// Owns the job queue: background work stored as rows, enqueued in the transaction of the change that
// asks for it (so it exists exactly when the change committed). Workers take due jobs with FOR UPDATE
// SKIP LOCKED and a lease, renewed while the job runs: any number of worker processes can share one
// database, and a job whose worker died is taken again once its lease runs out. Due times and leases
// are the database's time (now()), the one clock every process shares, never a process's own: a
// worker whose clock runs ahead must not take a job another still runs. The service clock is for what
// the practice sees (created_at, finished_at, the claim's and the delivery's own times).
import type { InsertObject, QueryCreator, RawBuilder } from 'kysely';
import { sql } from 'kysely';
import type { Static, TSchema } from 'typebox';
import type { Database } from '../platform/db/database.ts';
import { jsonWithLateTexts } from '../platform/db/late-text.ts';
import type { Tables } from '../platform/db/tables.ts';
import { afterCommit, asOperator, type Trx } from '../platform/db/transaction.ts';
import { writeUnanswered } from '../platform/db/unanswered-writes.ts';
import { newId } from '../platform/ids.ts';
import { currentTraceparent } from '../platform/observability/spans.ts';
import { followOnLease, takeFollowOns } from './follow-on.ts';
import type { TakenJobsPreparer } from './handoff.ts';
import type { JobRow } from './job-row.ts';
import { checkedPayload, type JobKind } from './kind.ts';
import { JOB_LANES, type JobLane, type TakeAnswer } from './lanes.ts';
import { type TakeRequest, takeFairly } from './take.ts';

export type { JobRow };

/** The NOTIFY channel on which a commit that queued jobs wakes the workers of other processes. */
export const JOBS_CHANNEL = 'practice_billing_jobs';

const inProcessWorkers = new Set<(lane: JobLane | undefined) => void>();

/**
 * Calls wake with the job's lane whenever this process commits a transaction that queued a job
 * (undefined: any lane may have one); returns how to stop.
 */
export function onJobsQueued(wake: (lane: JobLane | undefined) => void): () => void {
  inProcessWorkers.add(wake);
  return () => inProcessWorkers.delete(wake);
}

// One NOTIFY at a time per database and payload, and one more for everything queued while it was on
// its way.
const notifying = new WeakMap<Database, Map<string, { again: boolean }>>();

/** NOTIFY with the lane as payload, or an empty payload (every lane) for jobs of several lanes. */
function notifyOtherProcesses(db: Database, payload: JobLane | ''): void {
  let pending = notifying.get(db);
  if (!pending) {
    pending = new Map();
    notifying.set(db, pending);
  }
  const current = pending.get(payload);
  if (current) {
    current.again = true;
    return;
  }
  const state = { again: false };
  pending.set(payload, state);
  sql`SELECT pg_notify(${JOBS_CHANNEL}, ${payload})`
    .execute(db.kysely)
    .catch(() => {})
    .finally(() => {
      pending.delete(payload);
      if (state.again) notifyOtherProcesses(db, payload);
    });
}

/**
 * After the commit (never inside the transaction, so no worker looks before the job is visible):
 * wakes this process's worker, or, when this process runs none, the workers listening on PostgreSQL
 * with one NOTIFY, whose payload names the lane (empty when jobs of several lanes were queued).
 */
function jobsQueued(db: Database, lanes: readonly JobLane[]): void {
  if (inProcessWorkers.size > 0) {
    for (const wake of inProcessWorkers) for (const lane of lanes) wake(lane);
  } else if (db.kind === 'postgres') {
    notifyOtherProcesses(db, lanes.length === 1 ? lanes[0]! : '');
  }
}

// The lanes each transaction queued jobs in: it wakes their workers once, after it commits.
const lanesQueued = new WeakMap<Trx, Set<JobLane>>();

function wakeLaneAfterCommit(trx: Trx, lane: JobLane): void {
  let lanes = lanesQueued.get(trx);
  if (!lanes) {
    const queued = new Set<JobLane>();
    lanesQueued.set(trx, queued);
    afterCommit(trx, (db) => jobsQueued(db, [...queued]));
    lanes = queued;
  }
  lanes.add(lane);
}

/** The database's time `delayMs` from now (whole milliseconds): when a job falls due. */
function dueIn(delayMs: number): RawBuilder<Date> {
  const ms = Math.max(0, Math.round(delayMs));
  if (!Number.isFinite(ms)) throw new RangeError(`a job's delay must be finite, not ${delayMs}`);
  return ms === 0 ? sql<Date>`now()` : sql<Date>`now() + ${sql.raw(String(ms))} * interval '1 millisecond'`;
}

/**
 * A follow-on job's lease: it runs from the statement that inserts the job (clock_timestamp(), still
 * the database's clock), not from its transaction's start, which may be long past.
 */
function leaseFromInsert(leaseMs: number): RawBuilder<Date> {
  const ms = Math.max(0, Math.round(leaseMs));
  return sql<Date>`clock_timestamp() + ${sql.raw(String(ms))} * interval '1 millisecond'`;
}

/**
 * The row of a new job, due `delayMs` from now on the database's clock, its payload checked against
 * its kind, for a caller that inserts it in a statement of its own (several jobs, or jobs with the rows
 * they work on), answering the columns insertJobRows answers; that caller then calls
 * announceQueuedJobs in the same transaction with the rows it inserted and that answer. Jobs that name
 * one concurrencyKey (a delivery names its endpoint) share their lane's cap on how many run at once.
 * Queued from inside a running job and due at once, it may be leased to that job's worker as a
 * follow-on (src/jobs/follow-on.ts), with `handoff`, what the job would otherwise read again. A keyed
 * follow-on is leased by the insert only while fewer of its key's jobs than the cap run under a live
 * lease, in any worker (counted along jobs_held, in the same statement); otherwise it is inserted
 * queued and free, for a take.
 */
export function newJobRow<S extends TSchema>(
  practiceId: string,
  kind: JobKind<S>,
  payload: Static<S>,
  now: Date,
  delayMs = 0,
  concurrencyKey = '',
  handoff?: unknown,
): InsertObject<Tables, 'jobs'> & { id: string } {
  return jobRowOf(practiceId, kind, payload, now, delayMs, concurrencyKey, handoff).insert;
}

/** How a new job may be leased as a follow-on (src/jobs/follow-on.ts); undefined when it is not one. */
type FollowOnLease = ReturnType<typeof followOnLease>;

/**
 * newJobRow's row, and what its insert answers (insertJobRows) when that follows from the row alone:
 * always, but for a follow-on whose key has a cap, leased or not as the insert finds the key.
 */
function jobRowOf<S extends TSchema>(
  practiceId: string,
  kind: JobKind<S>,
  payload: Static<S>,
  now: Date,
  delayMs: number,
  concurrencyKey: string,
  handoff: unknown,
): { insert: InsertObject<Tables, 'jobs'> & { id: string }; answer: InsertedJob | undefined } {
  checkedPayload(kind, payload);
  const id = newId('job');
  const traceContext = currentTraceparent();
  const lease = followOnLease(kind.lane, concurrencyKey, delayMs);
  const belowCap = lease && capsHaveRoom(lease, kind.lane, practiceId, concurrencyKey);
  const leased = <T>(value: RawBuilder<T>, otherwise: RawBuilder<T>): RawBuilder<T> =>
    belowCap ? sql<T>`CASE WHEN ${belowCap} THEN ${value} ELSE ${otherwise} END` : value;
  const insert = {
    practice_id: practiceId,
    id,
    kind: kind.name,
    lane: kind.lane,
    concurrency_key: concurrencyKey,
    payload: JSON.stringify(payload),
    run_at: dueIn(delayMs),
    created_at: now,
    locked_by: lease
      ? leased(sql<string | null>`${lease.locked_by}::text`, sql<string | null>`NULL::text`)
      : null,
    locked_until: lease
      ? leased<Date | null>(leaseFromInsert(lease.leaseMs), sql<null>`NULL::timestamptz`)
      : null,
    ...(lease ? { attempts: leased(sql<number>`${lease.attempts}::int`, sql<number>`0`) } : {}),
    last_error: null,
    finished_at: null,
    trace_context: traceContext,
  };
  lease?.claim(insert, followOnRow(insert, lease, payload, now), handoff);
  return { insert, answer: belowCap ? undefined : { id, locked_by: lease?.locked_by ?? null } };
}

/**
 * Whether a follow-on's caps leave room for it, as the insert's own statement counts (its key's jobs
 * and its practice's of the lane, running under a live lease); undefined when it has no cap.
 */
function capsHaveRoom(
  lease: NonNullable<FollowOnLease>,
  lane: JobLane,
  practiceId: string,
  concurrencyKey: string,
): RawBuilder<boolean> | undefined {
  const keyBelowCap =
    lease.keyCap != null
      ? sql<boolean>`(SELECT count(*) FROM jobs
           WHERE lane = ${lane} AND practice_id = ${practiceId} AND concurrency_key = ${concurrencyKey}
             AND state = 'queued' AND locked_until > now()) < ${lease.keyCap}::int`
      : undefined;
  // The practice's cap, as a take counts it: its jobs of the lane running under a live lease.
  const practiceBelowCap =
    lease.practiceCap != null
      ? sql<boolean>`(SELECT count(*) FROM jobs
           WHERE lane = ${lane} AND practice_id = ${practiceId}
             AND state = 'queued' AND locked_until > now()) < ${lease.practiceCap}::int`
      : undefined;
  return keyBelowCap && practiceBelowCap
    ? sql<boolean>`(${keyBelowCap} AND ${practiceBelowCap})`
    : (keyBelowCap ?? practiceBelowCap);
}

/** The row a follow-on job will be when its insert leases it: what its worker runs. */
function followOnRow(
  insert: Pick<JobRow, 'practice_id' | 'id' | 'kind' | 'lane' | 'concurrency_key' | 'trace_context'>,
  lease: NonNullable<FollowOnLease>,
  payload: unknown,
  now: Date,
): JobRow {
  return {
    practice_id: insert.practice_id,
    id: insert.id,
    kind: insert.kind,
    lane: insert.lane,
    concurrency_key: insert.concurrency_key,
    payload: payload as Record<string, unknown>,
    run_at: now,
    created_at: now,
    locked_by: lease.locked_by,
    locked_until: new Date(now.getTime() + lease.leaseMs),
    attempts: lease.attempts,
    state: 'queued',
    last_error: null,
    finished_at: null,
    trace_context: insert.trace_context,
  };
}

/** What an insert of job rows answers (insertJobRows): whether each came back leased. */
export type InsertedJob = { id: string; locked_by: string | null };

/**
 * Once this transaction, which inserted job rows of `lane` (and was answered `answered`), has
 * committed: its follow-on jobs that came back leased go to the worker that leased them, and the
 * lane's workers are woken for the rest.
 */
export function announceQueuedJobs(
  trx: Trx,
  lane: JobLane,
  inserted: readonly object[],
  answered: readonly InsertedJob[],
): void {
  const leased = new Set(answered.filter((job) => job.locked_by !== null).map((job) => job.id));
  const { hand, others } = takeFollowOns(inserted, leased);
  if (hand) afterCommit(trx, hand);
  if (others) wakeLaneAfterCommit(trx, lane);
}

/**
 * The insert of job rows (newJobRow), for an owner that queues jobs in the same statement as its own
 * rows (a WITH): the statement stays one, and the jobs table's name stays here. It answers InsertedJob
 * rows, for announceQueuedJobs.
 */
export function insertJobRows(db: QueryCreator<Tables>, jobs: InsertObject<Tables, 'jobs'>[]) {
  return db.insertInto('jobs').values(jobs).returning(['id', 'locked_by']);
}

/**
 * Enqueues a job due `delayMs` (default 0) from now on the database's clock; `handoff` goes with it
 * when it follows on in this worker (newJobRow). Such a job (no concurrency key) is leased by its
 * insert exactly when it was built as a follow-on, so nobody need read the insert's answer: it is a
 * write sent with the transaction's next statement or its COMMIT (src/platform/db/unanswered-writes.ts).
 */
export async function enqueueJob<S extends TSchema>(
  trx: Trx,
  practiceId: string,
  kind: JobKind<S>,
  payload: Static<S>,
  now: Date,
  delayMs = 0,
  handoff?: unknown,
): Promise<string> {
  // No concurrency key, so no cap for the insert to look at: its answer is known.
  const { insert, answer } = jobRowOf(practiceId, kind, payload, now, delayMs, '', handoff);
  // A payload may name a text the transaction gives with its COMMIT (a new invoice's number).
  const json = await jsonWithLateTexts(trx, insert.payload as string);
  const row = { ...insert, payload: typeof json === 'string' ? json : sql<string>`(${json})::jsonb` };
  await writeUnanswered(trx, trx.insertInto('jobs').values(row));
  announceQueuedJobs(trx, kind.lane, [insert], [answer!]);
  return insert.id;
}

/**
 * Takes up to `limit` due jobs for this worker, leasing them for leaseMs: from the lanes asked (default
 * every lane), round-robin by practice, at most keyCap jobs of one concurrency key running at once
 * (src/jobs/take.ts). Due and free are judged on the database's clock, and the lease runs to the
 * database's time plus leaseMs.
 */
export async function takeDueJobs(
  db: Database,
  workerId: string,
  limit: number,
  leaseMs: number,
  options: {
    lanes?: readonly JobLane[];
    keyCap?: number | null;
    practiceCap?: number | null;
    prepare?: TakenJobsPreparer;
  } = {},
): Promise<JobRow[]> {
  const [answer] = await takeFairly(
    db,
    workerId,
    dueIn(leaseMs),
    [
      {
        lanes: options.lanes ?? JOB_LANES,
        limit,
        keyCap: options.keyCap ?? null,
        practiceCap: options.practiceCap ?? null,
      },
    ],
    options.prepare,
  );
  return answer!.jobs;
}

/**
 * A worker's takes, lane by lane: the takes asked for in one turn of the event loop (a commit that
 * queued jobs of two lanes wakes both at once) share one transaction, each answered as if taken alone;
 * `prepare` reads what the jobs taken need in that transaction.
 */
export function batchedTakes(
  db: Database,
  workerId: string,
  leaseMs: number,
  prepare?: TakenJobsPreparer,
): (request: TakeRequest) => Promise<TakeAnswer> {
  let waiting: Array<{ request: TakeRequest; settle: PromiseWithResolvers<TakeAnswer> }> = [];
  const flush = () => {
    const batch = waiting;
    waiting = [];
    takeFairly(
      db,
      workerId,
      dueIn(leaseMs),
      batch.map((take) => take.request),
      prepare,
    ).then(
      (answers) => {
        for (const [i, take] of batch.entries()) take.settle.resolve(answers[i]!);
      },
      (error: unknown) => {
        for (const take of batch) take.settle.reject(error);
      },
    );
  };
  return (request) => {
    const settle = Promise.withResolvers<TakeAnswer>();
    waiting.push({ request, settle });
    if (waiting.length === 1) setImmediate(flush);
    return settle.promise;
  };
}

/** A job's key in the answer of renewLeases. */
export function jobKey(job: Pick<JobRow, 'practice_id' | 'id'>): string {
  return `${job.practice_id}/${job.id}`;
}

/**
 * Renews the leases of jobs this worker is running, to the database's time plus leaseMs, and answers
 * the keys (jobKey) of those renewed. A job is renewed only while it is still queued and held by this
 * very take (this worker, this attempt): a job another worker took once its lease ran out, or that has
 * ended, is not, so its worker learns it lost the lease and never extends another's.
 */
export async function renewLeases(
  db: Database,
  workerId: string,
  jobs: readonly JobRow[],
  leaseMs: number,
): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const result = await asOperator(db, (trx) =>
    sql<{ practice_id: string; id: string }>`
      UPDATE jobs AS j SET locked_until = ${dueIn(leaseMs)}
        FROM unnest(${jobs.map((j) => j.practice_id)}::text[], ${jobs.map((j) => j.id)}::text[],
                    ${jobs.map((j) => j.attempts)}::int[]) AS held (practice_id, id, attempts)
       WHERE j.practice_id = held.practice_id AND j.id = held.id AND j.attempts = held.attempts
         AND j.locked_by = ${workerId} AND j.state = 'queued'
       RETURNING j.practice_id, j.id`.execute(trx),
  );
  return new Set(result.rows.map(jobKey));
}

/** The SQLSTATE of job_lease_lost() (migration 0015): the job was no longer this worker's. */
const JOB_LEASE_LOST = 'PBJ01';

/** True for the error of ending a job whose lease this worker had lost: nothing of its work was kept. */
export function isJobLeaseLost(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === JOB_LEASE_LOST;
}

/**
 * Changes a job while this worker holds it (the same take: worker and attempt, the job still queued),
 * as the last write of the transaction of its work: no answer is read, so on PostgreSQL it goes with
 * the COMMIT. When the job is no longer held (its lease ran out and another worker took it, or it
 * ended), the statement fails with JOB_LEASE_LOST, and so does the transaction: a worker that lost its
 * lease records nothing of what it did, as the job's new holder will.
 */
async function changeHeldJob(
  trx: Trx,
  job: JobRow,
  change: { state?: 'done'; finished_at?: Date; locked_by?: null; last_error?: string },
  delayMs?: number,
): Promise<void> {
  const assignments = Object.entries({ ...change, locked_until: null }).map(
    ([column, value]) => sql`${sql.ref(column)} = ${value}`,
  );
  if (delayMs !== undefined) assignments.push(sql`run_at = ${dueIn(delayMs)}`);
  await writeUnanswered(
    trx,
    sql`
    WITH changed AS (
      UPDATE jobs SET ${sql.join(assignments)}
       WHERE practice_id = ${job.practice_id} AND id = ${job.id}
         AND locked_by = ${job.locked_by} AND attempts = ${job.attempts} AND state = 'queued'
       RETURNING 1)
    SELECT job_lease_lost(${job.id}) WHERE NOT EXISTS (SELECT FROM changed)`,
  );
}

/** Marks a job done inside the transaction of its work (which fails should its lease have been lost). */
export async function finishJob(trx: Trx, job: JobRow, now: Date): Promise<void> {
  await changeHeldJob(trx, job, { state: 'done', finished_at: now });
}

/**
 * Deletes the jobs that finished (done or failed) before `before`. Nothing reads a finished job again
 * (a job's effects are recorded in the rows it changed, its failure in the log), and kept they would
 * grow the table by every job ever run (four a claim). Answers how many went.
 */
export async function purgeFinishedJobs(trx: Trx, before: Date): Promise<number> {
  const result = await trx
    .deleteFrom('jobs')
    .where('state', '<>', 'queued')
    .where('finished_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Puts a job back in the queue, due delayMs from now on the database's clock, in a transaction of its
 * own (its work's was undone).
 */
export async function retryJob(db: Database, job: JobRow, delayMs: number, error: string): Promise<void> {
  await asOperator(db, (trx) => rescheduleJob(trx, job, delayMs, error));
}

/**
 * Gives back the lease of a job this worker holds and will not run (its worker is stopping), so that
 * any worker may take it at its next take; nothing if the lease is no longer this worker's.
 */
export async function releaseJob(db: Database, job: JobRow): Promise<void> {
  await asOperator(db, (trx) =>
    trx
      .updateTable('jobs')
      .set({ locked_by: null, locked_until: null })
      .where('practice_id', '=', job.practice_id)
      .where('id', '=', job.id)
      .where('locked_by', '=', job.locked_by)
      .where('attempts', '=', job.attempts)
      .where('state', '=', 'queued')
      .execute(),
  );
}

/** Marks a job failed for good, if this worker still holds it (else nothing). */
export async function failJob(db: Database, job: JobRow, now: Date, error: string): Promise<void> {
  await asOperator(db, (trx) =>
    trx
      .updateTable('jobs')
      .set({ state: 'failed', finished_at: now, locked_until: null, last_error: error.slice(0, 2000) })
      .where('practice_id', '=', job.practice_id)
      .where('id', '=', job.id)
      .where('locked_by', '=', job.locked_by)
      .where('attempts', '=', job.attempts)
      .where('state', '=', 'queued')
      .execute(),
  );
}

/**
 * Puts a job back in the queue, due delayMs from now on the database's clock, inside the transaction
 * that recorded why (which fails should its lease have been lost).
 */
export async function rescheduleJob(trx: Trx, job: JobRow, delayMs: number, error: string): Promise<void> {
  await changeHeldJob(trx, job, { locked_by: null, last_error: error.slice(0, 2000) }, delayMs);
  rescheduled.add(job);
}

/** Jobs given back to the queue to run again later, by their handler or by the worker. */
const rescheduled = new WeakSet<JobRow>();

/** Whether this run of the job gave it back to run again (a retry), rather than ending it. */
export function wasRescheduled(job: JobRow): boolean {
  return rescheduled.has(job);
}

/**
 * Empties the payloads of the practice's finished jobs (done or failed) about these claims: a claim
 * submission's payload holds the member number and the lines' diagnoses. Used by a patient's
 * de-identification, which never runs while one of their claims is in flight.
 */
export async function forgetFinishedClaimPayloads(
  trx: Trx,
  practiceId: string,
  claimIds: string[],
): Promise<void> {
  if (claimIds.length === 0) return;
  await sql`UPDATE jobs SET payload = '{}'::jsonb
    WHERE practice_id = ${practiceId} AND state <> 'queued' AND payload->>'claimId' IN (${sql.join(claimIds)})`.execute(
    trx,
  );
}
