// Owns the outbox: an event is written in the same transaction as the change it reports, and so are
// its deliveries (one per enabled webhook endpoint of the practice that wants its type) and the jobs
// that make them. A delivery job queued by a running job follows on in its worker
// (src/jobs/follow-on.ts) with its endpoint and event handed over, read here already. An event exists exactly when its change committed, and none is lost between a
// commit and a queue. Capabilities report their changes through recordEvent, which costs two
// statements: the event's insert with the look-up of its endpoints, then (only when some endpoint
// takes it) the deliveries with their jobs.
import type { EventRecord, EventType } from '../events/schemas.ts';
import { newEventRow } from '../events/store.ts';
import { announceQueuedJobs, type InsertedJob, newJobRow } from '../jobs/queue.ts';
import type { EventDetail } from '../platform/db/column-types.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import type { PreparedAttempt } from './delivery.ts';
import { DELIVER_JOB } from './job-kinds.ts';
import { insertDeliveriesWithJobs, insertEventFindingEndpoints } from './store.ts';

export async function recordEvent(
  trx: Trx,
  practiceId: string,
  type: EventType,
  object: { type: 'invoice' | 'patient'; id: string },
  occurredAt: Date,
  detail: EventDetail | null = null,
): Promise<string> {
  const event = await newEventRow(trx, practiceId, type, object, occurredAt, detail);
  const endpoints = await insertEventFindingEndpoints(trx, practiceId, type, event);
  const record: EventRecord = {
    id: event.id,
    type,
    occurred_at: occurredAt,
    object_type: object.type,
    object_id: object.id,
    detail,
  };
  await queueDeliveries(
    trx,
    practiceId,
    endpoints.map((endpoint) => ({
      endpointId: endpoint.id,
      eventId: event.id,
      handoff: { endpoint, event: record },
    })),
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
  wanted: Array<{ endpointId: string; eventId: string; handoff?: Omit<PreparedAttempt, 'delivery'> }>,
  now: Date,
): Promise<string[]> {
  const ids: string[] = [];
  const queued: object[] = [];
  const answered: InsertedJob[] = [];
  for (let from = 0; from < wanted.length; from += DELIVERIES_PER_STATEMENT) {
    const batch = wanted.slice(from, from + DELIVERIES_PER_STATEMENT);
    const deliveries = batch.map((d) => ({
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
    const jobs = deliveries.map((d, i) => {
      const handoff = batch[i]!.handoff;
      const prepared: PreparedAttempt | undefined = handoff && {
        delivery: { id: d.id, attempts: 0 },
        ...handoff,
      };
      return newJobRow(practiceId, DELIVER_JOB, { deliveryId: d.id }, now, 0, d.endpoint_id, prepared);
    });
    answered.push(...(await insertDeliveriesWithJobs(trx, deliveries, jobs)));
    ids.push(...deliveries.map((d) => d.id));
    queued.push(...jobs);
  }
  if (ids.length > 0) announceQueuedJobs(trx, DELIVER_JOB.lane, queued, answered);
  return ids;
}
