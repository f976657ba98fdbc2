// Owns the webhook tables' queries (src/table-owners.ts): a practice's endpoints and their changes,
// the endpoints that take an event type, the outbox's event with its endpoints and its deliveries
// with their jobs, a delivery to attempt and what an attempt records, an event and its attempts, an
// endpoint's attempts page by page, the events whose delivery to an endpoint failed (or still
// retries) and was not made since, and the cancelling of an event's other deliveries once one
// succeeded.
import {
  type Insertable,
  type InsertObject,
  type Selectable,
  sql,
  type Updateable,
  type UpdateObject,
} from 'kysely';
import { insertEventRow } from '../events/store.ts';
import { type InsertedJob, insertJobRows } from '../jobs/queue.ts';
import { pastPosition } from '../paging/keyset.ts';
import type {
  EventsTable,
  Tables,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { writeUnanswered } from '../platform/db/unanswered-writes.ts';
import { orNotFound } from '../platform/http/errors.ts';

type EndpointRow = Selectable<WebhookEndpointsTable>;

/** An attempt row with its event's type, as the attempt logs read it. */
export interface AttemptRow {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  attempt_number: number;
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
  next_attempt_at: Date | null;
}

export async function listEndpoints(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** True for an endpoint row that takes events of `type`: it lists no types, or lists this one. */
export function takesEventType(type: string) {
  return sql<boolean>`(cardinality(event_types) = 0 OR ${type} = ANY (event_types))`;
}

/**
 * The practice's endpoints that take events of `type` (no types listed means all), optionally only
 * enabled ones or one. Their rows are held against deletion until commit (`FOR KEY SHARE`, the lock
 * a delivery's foreign key takes anyway), so the caller can queue deliveries to them: an endpoint
 * deleted by a concurrent request is either gone before this read or deleted after this commit.
 */
export async function endpointsTakingEvent(
  trx: Trx,
  practiceId: string,
  type: string,
  only: { enabled?: boolean; endpointId?: string | undefined } = {},
) {
  let query = trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where(takesEventType(type));
  if (only.enabled !== undefined) query = query.where('enabled', '=', only.enabled);
  if (only.endpointId) query = query.where('id', '=', only.endpointId);
  return query.orderBy('id').forKeyShare().execute();
}

export async function findEvent(trx: Trx, practiceId: string, eventId: string) {
  return trx
    .selectFrom('events')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', eventId)
    .executeTakeFirst();
}

/** Every attempt to deliver one event, to any endpoint, oldest first. */
export async function eventAttempts(trx: Trx, practiceId: string, eventId: string): Promise<AttemptRow[]> {
  const rows = await sql<AttemptRow>`
    SELECT a.*, e.type FROM webhook_attempts a
      JOIN events e ON e.practice_id = a.practice_id AND e.id = a.event_id
     WHERE a.practice_id = ${practiceId} AND a.event_id = ${eventId}
     ORDER BY a.attempted_at, a.id`.execute(trx);
  return rows.rows;
}

/** An endpoint's attempts, newest first; `before` is the previous page's last (attemptedAt, id). */
export async function endpointAttempts(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  before: readonly unknown[] | undefined,
  limit: number,
): Promise<AttemptRow[]> {
  const rows = await sql<AttemptRow>`
    SELECT a.*, e.type FROM webhook_attempts a
      JOIN events e ON e.practice_id = a.practice_id AND e.id = a.event_id
     WHERE a.practice_id = ${practiceId} AND a.endpoint_id = ${endpointId}
       AND ${pastPosition(
         'desc',
         before && [
           { column: 'a.attempted_at', value: before[0] as string, type: 'timestamptz' },
           { column: 'a.id', value: String(before[1]), type: 'text' },
         ],
       )}
     ORDER BY a.attempted_at DESC, a.id DESC
     LIMIT ${limit + 1}`.execute(trx);
  return rows.rows;
}

/** An event to recover: its earlier delivery failed for good, or is still waiting to retry. */
export interface Undelivered {
  eventId: string;
  retrying: boolean;
}

/**
 * Events whose delivery to the endpoint, made since `since`, failed or was cancelled, or (with
 * `includeRetrying`) failed at least once and still waits to retry, and that were not delivered since.
 * An event with a delivery queued and not yet tried is left out: it is about to be sent anyway.
 */
export async function undeliveredEventsSince(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  since: Date,
  includeRetrying: boolean,
): Promise<Undelivered[]> {
  const found = await sql<{ event_id: string; retrying: boolean }>`
    SELECT d.event_id, bool_or(d.state = 'pending') AS retrying FROM webhook_deliveries d
     WHERE d.practice_id = ${practiceId} AND d.endpoint_id = ${endpointId} AND d.created_at >= ${since}
       AND (d.state IN ('failed', 'cancelled') OR (${includeRetrying}::boolean AND d.state = 'pending' AND d.attempts > 0))
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.practice_id = ${practiceId}
             AND o.endpoint_id = d.endpoint_id AND o.event_id = d.event_id
             AND (o.state = 'delivered' OR (o.state = 'pending' AND (o.attempts = 0 OR NOT ${includeRetrying}::boolean))))
     GROUP BY d.event_id
     ORDER BY min(d.created_at), d.event_id`.execute(trx);
  return found.rows.map((r) => ({ eventId: r.event_id, retrying: r.retrying }));
}

/**
 * Cancels the endpoint's deliveries of these events still pending (waiting to retry or queued), but
 * `exceptId`: once one delivery of an event succeeded, or when a recovery queues a delivery that takes
 * the place of a retry still waiting. Their jobs then find them settled and send nothing, and an
 * attempt of theirs already on its way leaves them cancelled (updateDeliveryWithCommit).
 */
export async function cancelPendingDeliveries(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  eventIds: string[],
  now: Date,
  exceptId?: string,
): Promise<void> {
  if (eventIds.length === 0) return;
  let update = trx
    .updateTable('webhook_deliveries')
    .set({ state: 'cancelled', finished_at: now, next_attempt_at: null })
    .where('practice_id', '=', practiceId)
    .where('endpoint_id', '=', endpointId)
    .where('event_id', 'in', eventIds)
    .where('state', '=', 'pending');
  if (exceptId) update = update.where('id', '<>', exceptId);
  await update.execute();
}

/** The events about one invoice, in the order they were recorded. */
export async function eventsOfInvoice(trx: Trx, practiceId: string, invoiceId: string) {
  return trx
    .selectFrom('events')
    .select(['id', 'type', 'occurred_at'])
    .where('practice_id', '=', practiceId)
    .where('object_type', '=', 'invoice')
    .where('object_id', '=', invoiceId)
    .orderBy('seq')
    .execute();
}

/** Every attempt to deliver an event about one invoice, oldest first. */
export async function invoiceEventAttempts(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
): Promise<AttemptRow[]> {
  const rows = await sql<AttemptRow>`
    SELECT a.*, e.type FROM webhook_attempts a
      JOIN events e ON e.practice_id = a.practice_id AND e.id = a.event_id
     WHERE a.practice_id = ${practiceId} AND e.object_type = 'invoice' AND e.object_id = ${invoiceId}
     ORDER BY a.attempted_at, a.id`.execute(trx);
  return rows.rows;
}

/**
 * How a read holds the endpoint row until commit: not at all, against deletion (FOR KEY SHARE, as a
 * foreign key would), or for writing (FOR NO KEY UPDATE, which does not block KEY SHARE holders).
 */
export type EndpointLock = 'none' | 'keyShare' | 'noKeyUpdate';

/** The endpoint row, or undefined when there is none (deleted meanwhile included). */
export async function readEndpointRow(
  trx: Trx,
  practiceId: string,
  id: string,
  lock: EndpointLock = 'none',
): Promise<EndpointRow | undefined> {
  const query = trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id);
  const locked =
    lock === 'keyShare' ? query.forKeyShare() : lock === 'noKeyUpdate' ? query.forNoKeyUpdate() : query;
  return locked.executeTakeFirst();
}

/**
 * Writes `set` on the endpoint in one statement and answers the row as written; 404 when there is no
 * such endpoint, also when a concurrent request deleted it after this one last read it. Values that
 * depend on the row's own (the secret a rotation keeps as previous) are computed in the statement,
 * from the row as it is when written.
 */
export function changeEndpoint(
  trx: Trx,
  practiceId: string,
  id: string,
  set: UpdateObject<Tables, 'webhook_endpoints'>,
): Promise<EndpointRow> {
  return trx
    .updateTable('webhook_endpoints')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
    .then((row) => orNotFound(row, 'Webhook endpoint'));
}

export async function insertEndpoint(trx: Trx, row: Insertable<WebhookEndpointsTable>) {
  return trx.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Deletes the endpoint (its deliveries and attempts go with it); answers its id, or undefined when it is not there. */
export async function deleteEndpointRow(trx: Trx, practiceId: string, id: string) {
  return trx
    .deleteFrom('webhook_endpoints')
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
}

/**
 * Inserts the event and answers the practice's enabled endpoints that take its type, in one
 * statement. They are held against deletion until commit, as endpointsTakingEvent's: an endpoint
 * deleted meanwhile is skipped here rather than failing its delivery's foreign key.
 */
export async function insertEventFindingEndpoints(
  trx: Trx,
  practiceId: string,
  type: string,
  event: Insertable<EventsTable>,
) {
  return trx
    .with('recorded_event', (db) => insertEventRow(db, event))
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'secret_encrypted', 'previous_secret_encrypted', 'previous_secret_expires_at'])
    .where('practice_id', '=', practiceId)
    .where('enabled', '=', true)
    .where(takesEventType(type))
    .orderBy('id')
    .forKeyShare()
    .execute();
}

/**
 * Deliveries and the jobs that make them, in one statement (the jobs' insert is the queue's, and so is
 * its answer, for announceQueuedJobs).
 */
export async function insertDeliveriesWithJobs(
  trx: Trx,
  deliveries: Insertable<WebhookDeliveriesTable>[],
  jobs: InsertObject<Tables, 'jobs'>[],
): Promise<InsertedJob[]> {
  return insertJobRows(
    trx.with('queued_deliveries', (db) => db.insertInto('webhook_deliveries').values(deliveries)),
    jobs,
  ).execute();
}

/** The delivery with its endpoint and its event, in one statement (declared in src/table-owners.ts). */
function deliveriesToAttempt(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('webhook_deliveries as d')
    .leftJoin('webhook_endpoints as e', (join) =>
      join.onRef('e.practice_id', '=', 'd.practice_id').onRef('e.id', '=', 'd.endpoint_id'),
    )
    .leftJoin('events as ev', (join) =>
      join.onRef('ev.practice_id', '=', 'd.practice_id').onRef('ev.id', '=', 'd.event_id'),
    )
    .select([
      'd.id',
      'd.state',
      'd.attempts',
      'd.endpoint_id',
      'd.event_id',
      'e.id as endpoint_found',
      'e.enabled',
      'e.url',
      'e.secret_encrypted',
      'e.previous_secret_encrypted',
      'e.previous_secret_expires_at',
      'ev.id as event_found',
      'ev.type',
      'ev.occurred_at',
      'ev.object_type',
      'ev.object_id',
      'ev.detail',
    ])
    .where('d.practice_id', '=', practiceId);
}

/** A delivery with its endpoint and event, as an attempt needs them (each undefined/null when gone). */
export type DeliveryToAttempt = NonNullable<Awaited<ReturnType<typeof findDeliveryToAttempt>>>;

export async function findDeliveryToAttempt(trx: Trx, practiceId: string, deliveryId: string) {
  return deliveriesToAttempt(trx, practiceId).where('d.id', '=', deliveryId).executeTakeFirst();
}

/** Several deliveries of one practice, as findDeliveryToAttempt reads one; those not found are left out. */
export async function findDeliveriesToAttempt(trx: Trx, practiceId: string, deliveryIds: readonly string[]) {
  return deliveriesToAttempt(trx, practiceId)
    .where('d.id', 'in', [...deliveryIds])
    .execute();
}

export async function cancelDelivery(
  trx: Trx,
  practiceId: string,
  deliveryId: string,
  now: Date,
): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ state: 'cancelled', finished_at: now, next_attempt_at: null })
    .where('practice_id', '=', practiceId)
    .where('id', '=', deliveryId)
    .execute();
}

/** The attempt's row, a last write of its transaction: it goes with the COMMIT. */
export async function insertAttemptWithCommit(
  trx: Trx,
  attempt: Insertable<WebhookAttemptsTable>,
): Promise<void> {
  await writeUnanswered(trx, trx.insertInto('webhook_attempts').values(attempt));
}

/**
 * The delivery's state after an attempt, a last write of its transaction: it goes with the COMMIT. Only
 * a delivery still pending is changed: one cancelled while the attempt was on its way (another delivery
 * of its event succeeded, or a recovery took its place) stays cancelled, and its job, should this
 * attempt have failed, later finds it settled and sends nothing more.
 */
export async function updateDeliveryWithCommit(
  trx: Trx,
  practiceId: string,
  deliveryId: string,
  set: Updateable<WebhookDeliveriesTable>,
  /** The same event's other deliveries to the endpoint still pending, cancelled in the same statement. */
  cancelOthers?: { endpointId: string; eventId: string; now: Date },
): Promise<void> {
  const update = (db: Trx) =>
    db
      .updateTable('webhook_deliveries')
      .set(set)
      .where('practice_id', '=', practiceId)
      .where('id', '=', deliveryId)
      .where('state', '=', 'pending');
  if (!cancelOthers) {
    await writeUnanswered(trx, update(trx));
    return;
  }
  await writeUnanswered(
    trx,
    trx
      .with('cancelled', (db) =>
        db
          .updateTable('webhook_deliveries')
          .set({ state: 'cancelled', finished_at: cancelOthers.now, next_attempt_at: null })
          .where('practice_id', '=', practiceId)
          .where('endpoint_id', '=', cancelOthers.endpointId)
          .where('event_id', '=', cancelOthers.eventId)
          .where('state', '=', 'pending')
          .where('id', '<>', deliveryId),
      )
      .updateTable('webhook_deliveries')
      .set(set)
      .where('practice_id', '=', practiceId)
      .where('id', '=', deliveryId)
      .where('state', '=', 'pending'),
  );
}

export async function updateEndpointRow(
  trx: Trx,
  practiceId: string,
  id: string,
  set: Updateable<WebhookEndpointsTable>,
): Promise<void> {
  await trx
    .updateTable('webhook_endpoints')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .execute();
}

/**
 * Enabled endpoints whose deliveries are failing, in every practice (operator only): since when, for
 * the operator's metrics. Ids only.
 */
export async function failingEndpoints(
  trx: Trx,
): Promise<Array<{ practiceId: string; endpointId: string; failingSince: Date }>> {
  const rows = await trx
    .selectFrom('webhook_endpoints')
    .select(['practice_id', 'id', 'failing_since'])
    .where('enabled', '=', true)
    .where('failing_since', 'is not', null)
    .execute();
  return rows.map((row) => ({
    practiceId: row.practice_id,
    endpointId: row.id,
    failingSince: row.failing_since!,
  }));
}
