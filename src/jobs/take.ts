// Owns the statement that takes due jobs: fair between practices, capped per concurrency key, and safe
// with any number of worker processes. One statement per take:
// - it walks the groups with due jobs, a group being (lane, practice, concurrency key), along the index
//   jobs_lane_queue, one index probe per group (a skip scan), never the whole backlog;
// - in each group it locks, FOR UPDATE SKIP LOCKED, the oldest due and free jobs, as many as the group
//   may start: for a keyed group (a webhook endpoint's deliveries) the cap less the jobs of that key
//   already running under a lease, in any process (counted along jobs_held); each group's locking
//   subquery touches one practice's rows, though the statement as a whole locks rows of many;
// - it then deals the slots round-robin by practice: each practice's jobs are numbered from the count
//   it already has running in the lane, and the lowest numbers win, so a practice with a deep backlog
//   takes its turn after one that has nothing running, whatever their jobs' ages;
// - and leases the winners. Jobs locked but not dealt a slot are released when the statement commits.
// Due and free are judged on the database's clock. Two processes that take at the same instant both
// count the running jobs before either commits, so a key's cap can be passed by as many jobs as
// processes take at once; it is never passed within one process.
import { type RawBuilder, sql } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import type { JobRow } from './job-row.ts';
import type { JobLane } from './lanes.ts';

/**
 * Takes up to `limit` due jobs of `lanes` for this worker, leased until leaseEnd, at most keyCap of
 * one concurrency key running at once (null: no cap).
 */
export async function takeFairly(
  db: Database,
  workerId: string,
  limit: number,
  leaseEnd: RawBuilder<Date>,
  lanes: readonly JobLane[],
  keyCap: number | null,
): Promise<JobRow[]> {
  if (limit <= 0 || lanes.length === 0) return [];
  const cap = keyCap === null ? sql`NULL::int` : sql`${keyCap}::int`;
  return asOperator(db, async (trx) => {
    const result = await sql<JobRow>`
      WITH RECURSIVE grp AS (
        SELECT first.lane, first.practice_id, first.concurrency_key
          FROM unnest(${lanes}::text[]) AS wanted (lane)
         CROSS JOIN LATERAL (
           SELECT lane, practice_id, concurrency_key FROM jobs
            WHERE state = 'queued' AND lane = wanted.lane AND run_at <= now()
            ORDER BY practice_id, concurrency_key LIMIT 1) AS first
        UNION ALL
        SELECT nxt.lane, nxt.practice_id, nxt.concurrency_key FROM grp
         CROSS JOIN LATERAL (
           SELECT lane, practice_id, concurrency_key FROM jobs
            WHERE state = 'queued' AND lane = grp.lane AND run_at <= now()
              AND (practice_id, concurrency_key) > (grp.practice_id, grp.concurrency_key)
            ORDER BY practice_id, concurrency_key LIMIT 1) AS nxt
      ),
      held AS (
        SELECT lane, practice_id, concurrency_key, count(*)::int AS running FROM jobs
         WHERE state = 'queued' AND locked_until > now() AND lane = ANY(${lanes}::text[])
         GROUP BY lane, practice_id, concurrency_key
      ),
      held_by_practice AS (
        SELECT lane, practice_id, sum(running)::int AS running FROM held GROUP BY lane, practice_id
      ),
      locked AS (
        SELECT c.practice_id, c.id, c.run_at, g.lane
          FROM grp AS g
          LEFT JOIN held AS h
            ON h.lane = g.lane AND h.practice_id = g.practice_id AND h.concurrency_key = g.concurrency_key
         CROSS JOIN LATERAL (
           SELECT j.practice_id, j.id, j.run_at FROM jobs AS j
            WHERE j.lane = g.lane AND j.practice_id = g.practice_id AND j.concurrency_key = g.concurrency_key
              AND j.state = 'queued' AND j.run_at <= now()
              AND (j.locked_until IS NULL OR j.locked_until <= now())
            ORDER BY j.run_at, j.id
            LIMIT CASE WHEN g.concurrency_key = '' OR ${cap} IS NULL THEN ${limit}::int
                       ELSE greatest(0, least(${limit}::int, ${cap} - coalesce(h.running, 0))) END
            FOR UPDATE OF j SKIP LOCKED) AS c
      ),
      dealt AS (
        SELECT l.practice_id, l.id FROM (
          SELECT l.practice_id, l.id, l.run_at,
                 coalesce(p.running, 0)
                   + row_number() OVER (PARTITION BY l.lane, l.practice_id ORDER BY l.run_at, l.id) AS turn
            FROM locked AS l
            LEFT JOIN held_by_practice AS p ON p.lane = l.lane AND p.practice_id = l.practice_id) AS l
         ORDER BY l.turn, l.run_at, l.id
         LIMIT ${limit}::int
      )
      UPDATE jobs AS j SET locked_by = ${workerId}, locked_until = ${leaseEnd},
             attempts = j.attempts + 1
        FROM dealt
       WHERE j.practice_id = dealt.practice_id AND j.id = dealt.id
       RETURNING j.*`.execute(trx);
    return result.rows;
  });
}
