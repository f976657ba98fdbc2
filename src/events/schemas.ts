// Owns the shape of an event as the public API shows it: the very body a webhook delivery carries,
// built once here for both. `data` names the invoice (the contract fixes `object`, `id` and `url`); a
// claim, payment or refund event adds which claim (and its new status), payment or refund it is about.
import { Type } from 'typebox';
import type { EventDetail } from '../platform/db/column-types.ts';
import { DateTime, Enum, ListOf, Nullable } from '../platform/http/schema.ts';

export const EVENT_TYPES = [
  'invoice.issued',
  'invoice.delivery_failed',
  'invoice.cancelled',
  'invoice.entered_in_error',
  'invoice.written_off',
  'claim.status_changed',
  'payment.created',
  'refund.created',
  'patient.erased',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const Event = Type.Object(
  {
    id: Type.String({ description: 'Unique per event; the `webhook-id` of its deliveries.' }),
    type: Enum(EVENT_TYPES),
    occurredAt: DateTime,
    data: Type.Object(
      {
        object: Enum(['invoice', 'patient'], {
          description:
            'Kind of record changed; claim, payment and refund events name their invoice; `patient.erased` names the patient (by id only).',
        }),
        id: Type.String(),
        url: Nullable(Type.String({ description: 'Where to read the record with the API key.' })),
        claim: Type.Optional(
          Type.Object(
            {
              id: Type.String({ description: 'The claim whose status changed.' }),
              status: Type.String({
                description: 'Its status after the change, as the claim read answers it.',
              }),
            },
            {
              additionalProperties: false,
              description: 'On `claim.status_changed` only: which claim, and its new status.',
            },
          ),
        ),
        payment: Type.Optional(
          Type.Object(
            {
              id: Type.String({ description: 'The payment recorded.' }),
              amount: Type.Number({
                description: 'Its amount, in the invoice currency (negative: money taken back).',
              }),
              currency: Type.String(),
              source: Enum(['patient', 'insurer']),
            },
            {
              additionalProperties: false,
              description:
                'On `payment.created` only: which payment, so that two are told apart without a read.',
            },
          ),
        ),
        refund: Type.Optional(
          Type.Object(
            {
              id: Type.String({ description: 'The refund recorded.' }),
              amount: Type.Number({ description: 'What was given back, in the invoice currency.' }),
              currency: Type.String(),
            },
            {
              additionalProperties: false,
              description:
                'On `refund.created` only: which refund, so that two are told apart without a read.',
            },
          ),
        ),
      },
      {
        additionalProperties: false,
        description:
          '`object`, `id` and `url` name the invoice, as the contract fixes; a claim, payment or refund event adds `claim`, `payment` or `refund`.',
      },
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
  /** What a claim, payment or refund event says about its claim, payment or refund (null for invoice events). */
  detail: EventDetail | null;
}

/** The body of an event: answered by the events list and sent, as these bytes' source, to webhooks. */
export function eventBody(event: EventRecord, baseUrl: string) {
  return {
    id: event.id,
    type: event.type as EventType,
    occurredAt: event.occurred_at.toISOString(),
    data: {
      object: event.object_type as 'invoice' | 'patient',
      id: event.object_id,
      url: `${baseUrl}/api/v1/${event.object_type === 'patient' ? 'patients' : 'invoices'}/${event.object_id}`,
      // Key by key, so that the bytes are the same whether the detail was read back from jsonb (which
      // orders keys its own way) or handed over as written (a delivery that follows on).
      ...(event.detail?.claim
        ? { claim: { id: event.detail.claim.id, status: event.detail.claim.status } }
        : {}),
      ...(event.detail?.payment
        ? {
            payment: {
              id: event.detail.payment.id,
              amount: event.detail.payment.amount,
              currency: event.detail.payment.currency,
              source: event.detail.payment.source,
            },
          }
        : {}),
      ...(event.detail?.refund
        ? {
            refund: {
              id: event.detail.refund.id,
              amount: event.detail.refund.amount,
              currency: event.detail.refund.currency,
            },
          }
        : {}),
    },
  };
}
