// Owns the statements that take due jobs: fair between practices, capped per concurrency key, and safe
// with any number of worker processes. A take is two steps, so that no statement locks rows of more than
// one practice (a distributed PostgreSQL, Citus, refuses FOR UPDATE across shards; docs/scale-out.md):
// 1. the pick, which locks nothing: it walks the groups with due jobs, a group being (lane, practice,
//    concurrency key), along the index jobs_lane_queue, one index probe per group (a skip scan), never
//    the whole backlog; in each group it counts the oldest due and free jobs, as many as the group may
//    start: for a keyed group (a webhook endpoint's deliveries) the cap less the jobs of that key already
//    running under a lease, in any process (counted along jobs_held); it then deals the slots
//    round-robin by practice: each practice's jobs are numbered from the count it already has running
//    in the lane, and the lowest numbers win, so a practice with a deep backlog takes its turn after one
//    that has nothing running, whatever their jobs' ages; with a practice cap (the webhooks lane's
//    WEBHOOK_PRACTICE_CONCURRENCY) a practice is dealt no slot past it, counting its jobs running in
//    any process, so one practice's slow receivers hold at most that many of the lane's slots and its
//    other deliveries queue behind its own cap. It answers each practice's share of the slots.
// 2. one locking statement per practice that was dealt a share, in the same transaction: the same
//    walk, count and deal within that practice's rows only, locking FOR UPDATE SKIP LOCKED and leasing
//    at most its share. Jobs locked but not leased are released when the take commits. (A transaction
//    may lock rows of several shards one statement at a time; one statement may not.)
// A practice's jobs that another worker locks between the two steps are skipped, so a take may lease
// fewer jobs than it was dealt (never more); the rest wait for the next take. The pick also answers
// whether a key's cap held a due job back (heldBack), so that a lane looks again when a job of a
// capped key ends, and not after every keyed job. Several lanes' takes may share one transaction, one
// after the other, each with its own limit and cap (src/jobs/queue.ts, batchedTakes). Due and free are
// judged on the database's clock. Two processes that take at the same instant both count the running jobs
// before either commits, so a key's cap can be passed by as many jobs as processes take at once (and
// so can a follow-on job's insert, which counts them alike, src/jobs/queue.ts, beside another
// process's take). Within one process a lane holds no slot for a follow-on while its take is on its
// way (src/jobs/lanes.ts), so there the cap is not passed.
import { type RawBuilder, sql } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import { asOperator, type Trx } from '../platform/db/transaction.ts';
import type { TakenJobsPreparer } from './handoff.ts';
import type { JobRow } from './job-row.ts';
import type { JobLane, TakeAnswer } from './lanes.ts';

/** One lane's take (or several lanes' in one statement): how many jobs, and each key's cap (null: none). */
export interface TakeRequest {
  lanes: readonly JobLane[];
  limit: number;
  keyCap: number | null;
  /** Jobs of one practice running at once in the lane, in all workers; null (or left out) for none. */
  practiceCap?: number | null;
}

const NOTHING: TakeAnswer = { jobs: [], heldBack: false };

/**
 * Takes due jobs for this worker, leased until leaseEnd, for each request in turn, all in one
 * transaction (a commit that queued jobs of two lanes wakes both, and their takes share it); then, in
 * the same transaction, `prepare` reads what the jobs taken need (src/jobs/handoff.ts).
 */
export async function takeFairly(
  db: Database,
  workerId: string,
  leaseEnd: RawBuilder<Date>,
  requests: readonly TakeRequest[],
  prepare?: TakenJobsPreparer,
): Promise<TakeAnswer[]> {
  const wanted = (request: TakeRequest) => request.limit > 0 && request.lanes.length > 0;
  if (!requests.some(wanted)) return requests.map(() => NOTHING);
  // Planned once: a custom plan of these statements costs about a millisecond at every take.
  return asOperator(
    db,
    async (trx) => {
      const answers: TakeAnswer[] = [];
      for (const request of requests)
        answers.push(
          !wanted(request)
            ? NOTHING
            : db.distributed
              ? await takeAcrossNodes(trx, workerId, leaseEnd, request)
              : await takeOne(trx, workerId, leaseEnd, request),
        );
      const taken = answers.flatMap((answer) => answer.jobs);
      if (prepare && taken.length > 0) await prepare(trx, taken);
      return answers;
    },
    { genericPlans: true },
  );
}

async function takeOne(
  trx: Trx,
  workerId: string,
  leaseEnd: RawBuilder<Date>,
  { lanes, keyCap, limit, practiceCap = null }: TakeRequest,
): Promise<TakeAnswer> {
  const picked = await sql<{ practice_id: string | null; share: number | null; held_back: boolean }>`
      ${dealtSlots({ lanes, keyCap, practiceCap, limit, practiceId: null })},
      shares AS (
        SELECT practice_id, count(*)::int AS share, min(turn) AS first FROM dealt GROUP BY practice_id
      )
      SELECT s.practice_id, s.share, f.held_back
        FROM (SELECT ${heldBackByCap(keyCap)} OR ${heldBackByPracticeCap(practiceCap)} AS held_back) AS f
        LEFT JOIN shares AS s ON true
       ORDER BY s.first, s.practice_id`.execute(trx);
  const jobs: JobRow[] = [];
  for (const { practice_id, share } of picked.rows) {
    if (practice_id === null || share === null) continue;
    const leased = await sql<JobRow>`
        ${dealtSlots({ lanes, keyCap, practiceCap, limit: share, practiceId: practice_id })}
        UPDATE jobs AS j SET locked_by = ${workerId}, locked_until = ${leaseEnd},
               attempts = j.attempts + 1
          FROM dealt
         WHERE j.practice_id = ${practice_id} AND j.practice_id = dealt.practice_id AND j.id = dealt.id
         RETURNING j.*`.execute(trx);
    jobs.push(...leased.rows);
  }
  return { jobs, heldBack: picked.rows[0]?.held_back === true };
}

/**
 * The take on a distributed database (Citus), which refuses the pick's recursive walk over every
 * practice's jobs: the pick is a plain query over every node for the practices with due and free
 * jobs, oldest first, and each is then taken as takeOne takes one practice (one node's statement),
 * for what the limit leaves, until it is used. The caps hold as in takeOne (both are counted within
 * one practice); a take held back by a cap is not told apart, so such work waits for the next poll.
 */
async function takeAcrossNodes(
  trx: Trx,
  workerId: string,
  leaseEnd: RawBuilder<Date>,
  { lanes, keyCap, limit, practiceCap = null }: TakeRequest,
): Promise<TakeAnswer> {
  const picked = await sql<{ practice_id: string }>`
    SELECT practice_id FROM jobs
     WHERE state = 'queued' AND lane = ANY(${lanes}::text[]) AND run_at <= now()
       AND (locked_until IS NULL OR locked_until <= now())
     GROUP BY practice_id
     ORDER BY min(run_at), practice_id
     LIMIT ${limit}::int`.execute(trx);
  const jobs: JobRow[] = [];
  for (const { practice_id } of picked.rows) {
    const left = limit - jobs.length;
    if (left <= 0) break;
    const leased = await sql<JobRow>`
        ${dealtSlots({ lanes, keyCap, practiceCap, limit: left, practiceId: practice_id, walk: false })}
        UPDATE jobs AS j SET locked_by = ${workerId}, locked_until = ${leaseEnd},
               attempts = j.attempts + 1
          FROM dealt
         WHERE j.practice_id = ${practice_id} AND j.practice_id = dealt.practice_id AND j.id = dealt.id
         RETURNING j.*`.execute(trx);
    jobs.push(...leased.rows);
  }
  return { jobs, heldBack: false };
}

/**
 * Whether a keyed group (of the pick's `grp` and `held`) has more due and free jobs than its cap lets
 * start now: one index probe per keyed group, reading at most one job past what the cap allows.
 */
function heldBackByCap(keyCap: number | null): RawBuilder<boolean> {
  if (keyCap === null) return sql<boolean>`false`;
  const room = sql`greatest(0, ${keyCap}::int - coalesce(h.running, 0))`;
  return sql<boolean>`EXISTS (
    SELECT 1 FROM grp AS g
      LEFT JOIN held AS h
        ON h.lane = g.lane AND h.practice_id = g.practice_id AND h.concurrency_key = g.concurrency_key
     WHERE g.concurrency_key <> ''
       AND (SELECT count(*) FROM (
              SELECT 1 FROM jobs AS j
               WHERE j.lane = g.lane AND j.practice_id = g.practice_id AND j.concurrency_key = g.concurrency_key
                 AND j.state = 'queued' AND j.run_at <= now()
                 AND (j.locked_until IS NULL OR j.locked_until <= now())
               LIMIT ${room} + 1) AS free) > ${room})`;
}

/**
 * Whether a practice has more due and free jobs (among the pick's candidates) than its cap lets start
 * now: a job of that practice ending may free one.
 */
function heldBackByPracticeCap(practiceCap: number | null): RawBuilder<boolean> {
  if (practiceCap === null) return sql<boolean>`false`;
  return sql<boolean>`EXISTS (SELECT 1 FROM ranked WHERE turn > ${practiceCap}::int)`;
}

/**
 * The WITH clause whose `dealt` holds (practice_id, id, turn) of the jobs dealt a slot: across every
 * practice and unlocked (practiceId null: the pick), or within one practice, locked FOR UPDATE SKIP
 * LOCKED (the take).
 */
function dealtSlots(options: {
  lanes: readonly JobLane[];
  keyCap: number | null;
  practiceCap: number | null;
  limit: number;
  practiceId: string | null;
  /** The groups found by a recursive walk of the index (default), or by one plain query (Citus). */
  walk?: boolean;
}) {
  const { lanes, keyCap, practiceCap, limit, practiceId } = options;
  const cap = keyCap === null ? sql`NULL::int` : sql`${keyCap}::int`;
  const within = (column: RawBuilder<unknown>) =>
    practiceId === null ? sql`` : sql`AND ${column} = ${practiceId}`;
  const lock = practiceId === null ? sql`` : sql`FOR UPDATE OF j SKIP LOCKED`;
  return sql`
    ${groupsOf({ lanes, practiceId, walk: options.walk !== false })},
    ${heldRunning(lanes, within)},
    ${candidateJobs(cap, limit, lock, within)},
    ranked AS (
      SELECT l.practice_id, l.id, l.run_at,
             coalesce(p.running, 0)
               + row_number() OVER (PARTITION BY l.lane, l.practice_id ORDER BY l.run_at, l.id) AS turn
        FROM candidates AS l
        LEFT JOIN held_by_practice AS p ON p.lane = l.lane AND p.practice_id = l.practice_id
    ),
    dealt AS (
      SELECT l.practice_id, l.id, l.turn FROM ranked AS l
       WHERE ${practiceCap === null ? sql`true` : sql`l.turn <= ${practiceCap}::int`}
       ORDER BY l.turn, l.run_at, l.id
       LIMIT ${limit}::int
    )`;
}

type Within = (column: RawBuilder<unknown>) => RawBuilder<unknown>;

/**
 * The WITH clause's first part: `grp`, the (lane, practice, concurrency key) groups with due jobs. A
 * recursive walk of the index, one probe per group (the pick reads no more than it deals); or, where
 * Citus refuses a recursive CTE (on a distributed database: within one practice, always given there),
 * one plain query of the practice's due jobs.
 */
function groupsOf(options: { lanes: readonly JobLane[]; practiceId: string | null; walk: boolean }) {
  const { lanes, practiceId, walk } = options;
  const within = (column: RawBuilder<unknown>) =>
    practiceId === null ? sql`` : sql`AND ${column} = ${practiceId}`;
  if (!walk)
    return sql`WITH grp AS (
      SELECT DISTINCT lane, practice_id, concurrency_key FROM jobs
       WHERE state = 'queued' AND lane = ANY(${lanes}::text[]) AND run_at <= now() ${within(sql.ref('practice_id'))}
    )`;
  return sql`
    WITH RECURSIVE grp AS (
      SELECT first.lane, first.practice_id, first.concurrency_key
        FROM unnest(${lanes}::text[]) AS wanted (lane)
       CROSS JOIN LATERAL (
         SELECT lane, practice_id, concurrency_key FROM jobs
          WHERE state = 'queued' AND lane = wanted.lane AND run_at <= now() ${within(sql.ref('practice_id'))}
          ORDER BY practice_id, concurrency_key LIMIT 1) AS first
      UNION ALL
      SELECT nxt.lane, nxt.practice_id, nxt.concurrency_key FROM grp
       CROSS JOIN LATERAL (
         SELECT lane, practice_id, concurrency_key FROM jobs
          WHERE state = 'queued' AND lane = grp.lane AND run_at <= now() ${within(sql.ref('practice_id'))}
            AND (practice_id, concurrency_key) > (grp.practice_id, grp.concurrency_key)
          ORDER BY practice_id, concurrency_key LIMIT 1) AS nxt
    )`;
}

/** `held` and `held_by_practice`: the jobs running now, per concurrency key and per practice. */
function heldRunning(lanes: readonly JobLane[], within: Within) {
  return sql`held AS (
      SELECT lane, practice_id, concurrency_key, count(*)::int AS running FROM jobs
       WHERE state = 'queued' AND locked_until > now() AND lane = ANY(${lanes}::text[])
             ${within(sql.ref('practice_id'))}
       GROUP BY lane, practice_id, concurrency_key
    ),
    held_by_practice AS (
      SELECT lane, practice_id, sum(running)::int AS running FROM held GROUP BY lane, practice_id
    )`;
}

/** `candidates`: each group's due and free jobs, as many as its key's cap leaves room for. */
function candidateJobs(cap: RawBuilder<unknown>, limit: number, lock: RawBuilder<unknown>, within: Within) {
  return sql`candidates AS (
      SELECT c.practice_id, c.id, c.run_at, g.lane
        FROM grp AS g
        LEFT JOIN held AS h
          ON h.lane = g.lane AND h.practice_id = g.practice_id AND h.concurrency_key = g.concurrency_key
       CROSS JOIN LATERAL (
         SELECT j.practice_id, j.id, j.run_at FROM jobs AS j
          WHERE j.lane = g.lane AND j.practice_id = g.practice_id AND j.concurrency_key = g.concurrency_key
            AND j.state = 'queued' AND j.run_at <= now()
            AND (j.locked_until IS NULL OR j.locked_until <= now()) ${within(sql.ref('j.practice_id'))}
          ORDER BY j.run_at, j.id
          LIMIT CASE WHEN g.concurrency_key = '' OR ${cap} IS NULL THEN ${limit}::int
                     ELSE greatest(0, least(${limit}::int, ${cap} - coalesce(h.running, 0))) END
          ${lock}) AS c
    )`;
}
