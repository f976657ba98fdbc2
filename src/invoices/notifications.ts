// The operator's view of notifications: what the service told a patient (an invoice issued) or the
// practice (a webhook endpoint turned off), newest first, with what became of each one's e-mail.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { Enum, ListOf, Nullable, PagingQuery } from '../platform/http/schema.ts';
import { getPractice } from '../practices/service.ts';
import { listNotifications } from './service.ts';

const Notification = Type.Object({
  object: Type.Literal('notification'),
  id: Type.String(),
  recipient: Enum(['patient', 'practice']),
  patientId: Nullable(Type.String()),
  kind: Type.String({ description: 'invoice_issued or webhook_endpoint_disabled.' }),
  subjectType: Type.String(),
  subjectId: Type.String(),
  message: Type.String(),
  delivery: Enum(['none', 'queued', 'sent', 'failed', 'no_address'], {
    description:
      "What became of its e-mail: queued (waiting, or retrying after a failure deliveryDetail gives), sent (deliveryDetail: the mail server's answer, or that it was kept in the outbox), failed (deliveryDetail: why; an account's failure also raises invoice.delivery_failed), no_address (the patient, or the practice, has no e-mail address), none (not e-mailed).",
  }),
  deliveryDetail: Nullable(Type.String()),
  deliveryUpdatedAt: Nullable(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
});

export const notificationAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/notifications',
    operationId: 'adminListNotifications',
    cli: { command: 'notifications list' },
    summary: "A practice's notifications, newest first",
    params: Type.Object(
      { practiceId: Type.String({ minLength: 1, maxLength: 100 }) },
      { additionalProperties: false },
    ),
    querystring: Type.Object(
      {
        ...PagingQuery,
        subjectId: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 100,
            description: 'Only those about this invoice or endpoint.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: ListOf(Notification, 'NotificationList'),
    handler: async ({ trx, deps, params, query }) => {
      await getPractice(trx, params.practiceId);
      const limit = query.limit ?? 50;
      const filters = { practiceId: params.practiceId, subjectId: query.subjectId ?? null };
      const position = query.cursor ? deps.cursors.decode('notifications', filters, query.cursor) : undefined;
      const before = position ? { createdAt: String(position[0]), id: String(position[1]) } : undefined;
      const rows = await listNotifications(trx, params.practiceId, before, limit, query.subjectId);
      return {
        body: pageOf(
          rows,
          limit,
          (r) => ({
            object: 'notification' as const,
            id: r.id,
            recipient: r.recipient,
            patientId: r.patient_id,
            kind: r.kind,
            subjectType: r.subject_type,
            subjectId: r.subject_id,
            message: r.message,
            delivery: r.delivery,
            deliveryDetail: r.delivery_detail,
            deliveryUpdatedAt: r.delivery_updated_at?.toISOString() ?? null,
            createdAt: r.created_at.toISOString(),
          }),
          (r) => [r.created_at.toISOString(), r.id],
          (p) => deps.cursors.encode('notifications', filters, p),
        ),
      };
    },
  }),
];
