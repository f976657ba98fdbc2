// Owns the shape of an event as the public API shows it: the very body a webhook delivery carries,
// built once here for both.
import { Type } from 'typebox';
import { DateTime, Enum, ListOf, Nullable } from '../platform/http/schema.ts';

export const EVENT_TYPES = [
  'invoice.issued',
  'invoice.cancelled',
  'invoice.entered_in_error',
  'invoice.written_off',
  'claim.status_changed',
  'payment.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const Event = Type.Object(
  {
    id: Type.String({ description: 'Unique per event; the `webhook-id` of its deliveries.' }),
    type: Enum(EVENT_TYPES),
    occurredAt: DateTime,
    data: Type.Object(
      {
        object: Enum(['invoice'], {
          description: 'Kind of record changed; claim and payment events name their invoice.',
        }),
        id: Type.String(),
        url: Nullable(Type.String({ description: 'Where to read the record with the API key.' })),
      },
      { additionalProperties: false },
    ),
  },
  { title: 'Event', additionalProperties: false },
);

export const EventList = ListOf(Event, 'EventList');

export interface EventRecord {
  id: string;
  type: string;
  occurred_at: Date;
  object_type: string;
  object_id: string;
}

/** The body of an event: answered by the events list and sent, as these bytes' source, to webhooks. */
export function eventBody(event: EventRecord, baseUrl: string) {
  return {
    id: event.id,
    type: event.type as EventType,
    occurredAt: event.occurred_at.toISOString(),
    data: {
      object: event.object_type as 'invoice',
      id: event.object_id,
      url: `${baseUrl}/api/v1/invoices/${event.object_id}`,
    },
  };
}
