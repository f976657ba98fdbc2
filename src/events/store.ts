// Owns the events table: writing an event (for the outbox, src/webhooks/outbox.ts) and the events
// list's queries. Events are read in feed order, (stamp, seq), and only below the
// change feed's safe high-water mark (src/platform/db/change-feed.ts): every event that commits later
// is stamped at or above it, so it can never land before the place a reader has already paged to.
// Events older than the retention window are not served; the rows stay, since webhook delivery logs
// name them (docs/decisions/0078-events-retention.md).
import { type Insertable, type QueryCreator, sql } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import { safeHighWaterMark, stampChange } from '../platform/db/change-feed.ts';
import type { EventDetail } from '../platform/db/column-types.ts';
import type { EventsTable, Tables } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import type { EventRecord, EventType } from './schemas.ts';

export const EVENT_RETENTION_DAYS = 30;

export function retainedSince(now: Date): Date {
  return new Date(now.getTime() - EVENT_RETENTION_DAYS * 24 * 3600_000);
}

export interface EventFeedRow extends EventRecord {
  stamp: Date;
  /** Insertion order: the events of one transaction share a stamp and keep the order they were recorded in. */
  seq: string;
}

// Ordered by the table's seq (a number), not the text column of the same name the list answers.
const COLUMNS = sql`id, type, object_type, object_id, detail, occurred_at, stamp, seq::text AS seq`;

/**
 * The row of a new event, stamped with the change feed's time of its transaction, which orders the
 * list; the outbox (src/webhooks/outbox.ts) inserts it together with its deliveries' look-up.
 */
export async function newEventRow(
  trx: Trx,
  practiceId: string,
  type: EventType,
  object: { type: 'invoice' | 'patient'; id: string },
  occurredAt: Date,
  detail: EventDetail | null = null,
): Promise<Insertable<EventsTable> & { id: string }> {
  return {
    practice_id: practiceId,
    id: newId('event'),
    type,
    object_type: object.type,
    object_id: object.id,
    detail: detail ? JSON.stringify(detail) : null,
    occurred_at: occurredAt,
    stamp: await stampChange(trx),
  };
}

/** The insert of a new event's row, for a WITH of the statement that looks up its endpoints. */
export function insertEventRow(db: QueryCreator<Tables>, event: Insertable<EventsTable>) {
  return db.insertInto('events').values(event);
}

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
  /** Events stamped at or after this time. */
  createdSince?: Date;
  retainedSince: Date;
}

/** Up to limit + 1 events after `after` in feed order, below the safe high-water mark. */
export async function listEventRows(
  trx: Trx,
  practiceId: string,
  filters: EventFilters,
  after: { stamp: Date; seq: string } | undefined,
  limit: number,
): Promise<EventFeedRow[]> {
  const highWater = await safeHighWaterMark(trx);
  const conditions = [
    sql`practice_id = ${practiceId}`,
    sql`stamp < ${highWater}`,
    sql`occurred_at >= ${filters.retainedSince}`,
  ];
  if (filters.types) conditions.push(sql`type = ANY (${filters.types}::text[])`);
  if (filters.createdSince) conditions.push(sql`stamp >= ${filters.createdSince}`);
  if (after) {
    conditions.push(
      pastPosition('asc', [
        { column: 'stamp', value: after.stamp, type: 'timestamptz' },
        { column: 'seq', value: after.seq, type: 'bigint' },
      ]),
    );
  }
  const result = await sql<EventFeedRow>`
    SELECT ${COLUMNS} FROM events
    WHERE ${sql.join(conditions, sql` AND `)}
    ORDER BY stamp, events.seq
    LIMIT ${limit + 1}`.execute(trx);
  return result.rows.map((row) => ({
    ...row,
    stamp: new Date(row.stamp),
    occurred_at: new Date(row.occurred_at),
  }));
}
