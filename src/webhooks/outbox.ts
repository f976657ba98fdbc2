// Owns the outbox: an event is written in the same transaction as the change it reports, and so are
// its deliveries (one per enabled webhook endpoint of the practice that wants its type) and the jobs
// that make them. An event exists exactly when its change committed, and none is lost between a
// commit and a queue. Capabilities report their changes through recordEvent, which costs two
// statements: the event's insert with the look-up of its endpoints, then (only when some endpoint
// takes it) the deliveries with their jobs.
import type { EventType } from '../events/schemas.ts';
import { newEventRow } from '../events/store.ts';
import { announceQueuedJobs, newJobRow } from '../jobs/queue.ts';
import type { EventDetail } from '../platform/db/column-types.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import { DELIVER_JOB } from './job-kinds.ts';
import { insertDeliveriesWithJobs, insertEventFindingEndpoints } from './store.ts';

export async function recordEvent(
  trx: Trx,
  practiceId: string,
  type: EventType,
  object: { type: 'invoice'; id: string },
  occurredAt: Date,
  detail: EventDetail | null = null,
): Promise<string> {
  const event = await newEventRow(trx, practiceId, type, object, occurredAt, detail);
  const endpoints = await insertEventFindingEndpoints(trx, practiceId, type, event);
  await queueDeliveries(
    trx,
    practiceId,
    endpoints.map((endpoint) => ({ endpointId: endpoint.id, eventId: event.id })),
    occurredAt,
  );
  return event.id;
}

// A delivery and its job are 19 parameters; this keeps a statement well below PostgreSQL's 65,535.
const DELIVERIES_PER_STATEMENT = 500;

/**
 * Deliveries of events to endpoints, each with the job that makes its first attempt now, inserted
 * together; returns their ids in the order asked.
 */
export async function queueDeliveries(
  trx: Trx,
  practiceId: string,
  wanted: Array<{ endpointId: string; eventId: string }>,
  now: Date,
): Promise<string[]> {
  const ids: string[] = [];
  for (let from = 0; from < wanted.length; from += DELIVERIES_PER_STATEMENT) {
    const deliveries = wanted.slice(from, from + DELIVERIES_PER_STATEMENT).map((d) => ({
      practice_id: practiceId,
      id: newId('delivery'),
      endpoint_id: d.endpointId,
      event_id: d.eventId,
      state: 'pending' as const,
      next_attempt_at: now,
      last_status: null,
      created_at: now,
      finished_at: null,
    }));
    // Each job names its endpoint: the webhooks lane caps how many run at once to one endpoint.
    const jobs = deliveries.map((d) =>
      newJobRow(practiceId, DELIVER_JOB, { deliveryId: d.id }, now, 0, d.endpoint_id),
    );
    await insertDeliveriesWithJobs(trx, deliveries, jobs);
    ids.push(...deliveries.map((d) => d.id));
  }
  if (ids.length > 0) announceQueuedJobs(trx, DELIVER_JOB.lane);
  return ids;
}
