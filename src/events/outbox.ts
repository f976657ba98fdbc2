// Owns the event outbox: an event is written in the same transaction as the change it reports, so
// it exists exactly when the change committed. Deliveries (webhooks) are made from it.
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';

export const EVENT_TYPES = ['invoice.issued', 'claim.status_changed', 'payment.created'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export async function recordEvent(
  trx: Trx,
  practiceId: string,
  type: EventType,
  object: { type: 'invoice'; id: string },
  occurredAt: Date,
): Promise<string> {
  const id = newId('event');
  await trx
    .insertInto('events')
    .values({
      practice_id: practiceId,
      id,
      type,
      object_type: object.type,
      object_id: object.id,
      occurred_at: occurredAt,
    })
    .execute();
  return id;
}
