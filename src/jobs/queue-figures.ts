// Owns what the operator sees of the job queue, read on the database's clock across every practice:
// per lane, the jobs waiting (due, not running), running (under a lease), and how long the oldest
// waiting one has been due; the practices with the most jobs waiting; and the
// jobs running per concurrency key of the webhooks lane (deliveries in flight per endpoint).
import { sql } from 'kysely';
import { outsideConnectionBound } from '../platform/db/connection-waits.ts';
import type { Database } from '../platform/db/database.ts';
import { callOperatorFunction, type Trx } from '../platform/db/transaction.ts';
import { JOB_LANES, type JobLane } from './lanes.ts';

export interface LaneFigures {
  lane: JobLane;
  waiting: number;
  running: number;
  /** Seconds since the oldest waiting job fell due; null when none waits. */
  oldestWaitingSeconds: number | null;
}

export interface QueueFigures {
  lanes: LaneFigures[];
  deepestBacklogs: Array<{ practiceId: string; lane: JobLane; waiting: number }>;
  deliveriesInFlight: Array<{ practiceId: string; endpointId: string; running: number; waiting: number }>;
}

const RUNNING = sql`locked_until > now()`;
const WAITING = sql`run_at <= now() AND (locked_until IS NULL OR locked_until <= now())`;

export async function queueFigures(trx: Trx, top = 10): Promise<QueueFigures> {
  const lanes = await sql<{
    lane: string;
    waiting: number;
    running: number;
    oldest: number | null;
  }>`
    SELECT lane,
           count(*) FILTER (WHERE ${WAITING})::int AS waiting,
           count(*) FILTER (WHERE ${RUNNING})::int AS running,
           extract(epoch FROM now() - min(run_at) FILTER (WHERE ${WAITING}))::float8 AS oldest
      FROM jobs WHERE state = 'queued' GROUP BY lane`.execute(trx);
  const deepest = await sql<{ practice_id: string; lane: JobLane; waiting: number }>`
    SELECT practice_id, lane, count(*)::int AS waiting FROM jobs
     WHERE state = 'queued' AND ${WAITING}
     GROUP BY practice_id, lane ORDER BY waiting DESC, practice_id LIMIT ${top}`.execute(trx);
  const inFlight = await sql<{
    practice_id: string;
    concurrency_key: string;
    running: number;
    waiting: number;
  }>`
    SELECT practice_id, concurrency_key,
           count(*) FILTER (WHERE ${RUNNING})::int AS running,
           count(*) FILTER (WHERE ${WAITING})::int AS waiting
      FROM jobs WHERE state = 'queued' AND lane = 'webhooks' AND concurrency_key <> ''
     GROUP BY practice_id, concurrency_key
    HAVING count(*) FILTER (WHERE ${RUNNING}) > 0
     ORDER BY running DESC, waiting DESC, practice_id, concurrency_key LIMIT ${top * 2}`.execute(trx);
  const byLane = new Map(lanes.rows.map((row) => [row.lane, row]));
  return {
    lanes: JOB_LANES.map((lane) => {
      const row = byLane.get(lane);
      return {
        lane,
        waiting: row?.waiting ?? 0,
        running: row?.running ?? 0,
        oldestWaitingSeconds:
          row?.oldest === null || row?.oldest === undefined ? null : Math.max(0, row.oldest),
      };
    }),
    deepestBacklogs: deepest.rows.map((row) => ({
      practiceId: row.practice_id,
      lane: row.lane,
      waiting: row.waiting,
    })),
    deliveriesInFlight: inFlight.rows.map((row) => ({
      practiceId: row.practice_id,
      endpointId: row.concurrency_key,
      running: row.running,
      waiting: row.waiting,
    })),
  };
}

/**
 * How long the oldest due job of `lane` has waited for a worker, in milliseconds (0 when none waits),
 * of every practice, through the operator-owned function of migration 0023 (callOperatorFunction).
 * Never under a request's bound on its connection wait.
 */
export async function laneBacklogMs(db: Database, lane: JobLane): Promise<number> {
  const query = sql<{ ms: number }>`SELECT job_backlog_ms(${lane}) AS ms`;
  const result = await outsideConnectionBound(() => callOperatorFunction(db, query));
  return Number(result.rows[0]?.ms ?? 0);
}

/** How many of the practice's jobs are still to run or running (queued): work in flight. */
export async function practiceJobsInFlight(trx: Trx, practiceId: string): Promise<number> {
  const result = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM jobs WHERE practice_id = ${practiceId} AND state = 'queued'`.execute(trx);
  return result.rows[0]?.n ?? 0;
}
