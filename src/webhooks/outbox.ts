// Owns the outbox: an event is written in the same transaction as the change it reports, and so are
// its deliveries (one per enabled webhook endpoint of the practice that wants its type) and the jobs
// that make them. An event exists exactly when its change committed, and none is lost between a
// commit and a queue. Capabilities report their changes through recordEvent.
import type { EventType } from '../events/schemas.ts';
import { insertEvent } from '../events/store.ts';
import { enqueueJob } from '../jobs/queue.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';
import { DELIVER_JOB } from './job-kinds.ts';
import { endpointsTakingEvent } from './store.ts';

export async function recordEvent(
  trx: Trx,
  practiceId: string,
  type: EventType,
  object: { type: 'invoice'; id: string },
  occurredAt: Date,
): Promise<string> {
  const id = await insertEvent(trx, practiceId, type, object, occurredAt);
  const endpoints = await endpointsTakingEvent(trx, practiceId, type, { enabled: true });
  for (const endpoint of endpoints) await queueDelivery(trx, practiceId, endpoint.id, id, occurredAt);
  return id;
}

/** A delivery of one event to one endpoint, with the job that makes its first attempt now. */
export async function queueDelivery(
  trx: Trx,
  practiceId: string,
  endpointId: string,
  eventId: string,
  now: Date,
): Promise<string> {
  const deliveryId = newId('delivery');
  await trx
    .insertInto('webhook_deliveries')
    .values({
      practice_id: practiceId,
      id: deliveryId,
      endpoint_id: endpointId,
      event_id: eventId,
      state: 'pending',
      next_attempt_at: now,
      last_status: null,
      created_at: now,
      finished_at: null,
    })
    .execute();
  await enqueueJob(trx, practiceId, DELIVER_JOB, { deliveryId }, now, now);
  return deliveryId;
}
