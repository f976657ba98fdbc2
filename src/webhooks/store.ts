// Owns the webhook queries that routes and the outbox share: a practice's endpoints, the endpoints
// that take an event type, an event and its attempts, an endpoint's attempts page by page, and the
// events whose delivery to an endpoint failed (or still retries) and was not made since, and the
// cancelling of an event's other deliveries once one succeeded.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

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
       AND (${before === undefined}::boolean OR (a.attempted_at, a.id) < (${before?.[0] ?? '1970-01-01'}::timestamptz, ${String(before?.[1] ?? '')}::text))
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
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.practice_id = d.practice_id
             AND o.endpoint_id = d.endpoint_id AND o.event_id = d.event_id
             AND (o.state = 'delivered' OR (o.state = 'pending' AND (o.attempts = 0 OR NOT ${includeRetrying}::boolean))))
     GROUP BY d.event_id
     ORDER BY min(d.created_at), d.event_id`.execute(trx);
  return found.rows.map((r) => ({ eventId: r.event_id, retrying: r.retrying }));
}

/**
 * Cancels the endpoint's other deliveries of the event still pending (waiting to retry or queued),
 * once one delivery of it succeeded: their jobs then find them settled and send nothing.
 */
export async function cancelOtherDeliveries(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  eventId: string,
  deliveredId: string,
  now: Date,
): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ state: 'cancelled', finished_at: now, next_attempt_at: null })
    .where('practice_id', '=', practiceId)
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventId)
    .where('state', '=', 'pending')
    .where('id', '<>', deliveredId)
    .execute();
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
