// Owns the events list's queries. Events are read in feed order, (stamp, id), and only below the
// feed's safe high-water mark: a stamp no writer still running can go below, so an event that
// commits late can never land before the place a reader has already paged to. Events older than the
// retention window are not served (the rows stay: webhook delivery logs name them).
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';
import { readBound } from './feed.ts';
import type { EventRecord } from './schemas.ts';

export const EVENT_RETENTION_DAYS = 30;

export function retainedSince(now: Date): Date {
  return new Date(now.getTime() - EVENT_RETENTION_DAYS * 24 * 3600_000);
}

export interface EventFeedRow extends EventRecord {
  /** The feed stamp, as text (exact, for the cursor). */
  stamp: string;
}

const COLUMNS = sql`id, type, object_type, object_id, occurred_at, stamp::text AS stamp`;

/** One event of the practice still within the retention window. */
export async function eventRow(
  trx: Trx,
  practiceId: string,
  id: string,
  since: Date,
): Promise<EventFeedRow | undefined> {
  const result = await sql<EventFeedRow>`
    SELECT ${COLUMNS} FROM events
    WHERE practice_id = ${practiceId} AND id = ${id} AND occurred_at >= ${since}`.execute(trx);
  return result.rows[0];
}

export interface EventFilters {
  types?: string[];
  createdSince?: Date;
  retainedSince: Date;
}

/** Up to limit + 1 events after `after` in feed order, below the safe high-water mark. */
export async function listEventRows(
  trx: Trx,
  practiceId: string,
  filters: EventFilters,
  after: { stamp: string; id: string } | undefined,
  limit: number,
): Promise<EventFeedRow[]> {
  const bound = await readBound(trx);
  const conditions = [
    sql`practice_id = ${practiceId}`,
    sql`stamp < ${bound}`,
    sql`occurred_at >= ${filters.retainedSince}`,
  ];
  if (filters.types) conditions.push(sql`type = ANY (${filters.types}::text[])`);
  if (filters.createdSince) conditions.push(sql`occurred_at >= ${filters.createdSince}`);
  if (after) conditions.push(sql`(stamp, id) > (${after.stamp}::timestamptz, ${after.id})`);
  const result = await sql<EventFeedRow>`
    SELECT ${COLUMNS} FROM events
    WHERE ${sql.join(conditions, sql` AND `)}
    ORDER BY stamp, id
    LIMIT ${limit + 1}`.execute(trx);
  return result.rows;
}
