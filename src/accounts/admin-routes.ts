// Declares the operator's view of patients' accounts and the mail outbox: an issued invoice's account
// as PDF (the console's "Download account"), and, with no SMTP server configured (the sandbox), each
// e-mail the service would have sent, kept instead, so an integrator sees exactly what a patient or the
// practice would receive: the list (to, subject, time, text) and each attachment.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { ListOf, Nullable, PagingQuery } from '../platform/http/schema.ts';
import { getPractice } from '../practices/service.ts';
import { renderAccountPdf } from './document.ts';
import { outboxAttachment, outboxPage } from './outbox.ts';
import { gatherAccount } from './service.ts';
import { accountViewOf } from './view.ts';

const OutboxMessage = Type.Object(
  {
    object: Type.Literal('outbox_message'),
    id: Type.String(),
    notificationId: Type.String(),
    to: Type.String(),
    subject: Type.String(),
    text: Type.String(),
    attachment: Nullable(Type.Object({ filename: Type.String(), size: Type.Integer() })),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'OutboxMessage' },
);

const PathId = Type.String({ minLength: 1, maxLength: 100 });
const PracticeParams = Type.Object({ practiceId: PathId }, { additionalProperties: false });
const InvoiceParams = Type.Object({ practiceId: PathId, invoiceId: PathId }, { additionalProperties: false });
const MessageParams = Type.Object({ practiceId: PathId, messageId: PathId }, { additionalProperties: false });

/** A success answered as a PDF document (the handler's `file`), which `description` describes. */
function pdfAnswer(description: string) {
  return {
    produces: 'application/pdf',
    successStatus: 200,
    response: Type.Unsafe<string>({ type: 'string', format: 'binary', description }),
  };
}

export const accountAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/invoices/:invoiceId/document',
    operationId: 'adminGetInvoiceDocument',
    cli: { command: 'invoices document' },
    summary: "An issued invoice's account for the patient, as PDF",
    description: 'The same document as GET /api/v1/invoices/{invoiceId}/document; a draft answers 422.',
    params: InvoiceParams,
    ...pdfAnswer("The patient's account."),
    handler: async ({ trx, params, now }) => {
      await getPractice(trx, params.practiceId);
      const { parts, record } = await gatherAccount(trx, params.practiceId, params.invoiceId);
      const view = accountViewOf(parts);
      return {
        body: '',
        file: {
          contentType: 'application/pdf',
          filename: `${record.invoice.number}.pdf`,
          render: () => renderAccountPdf(view, now),
        },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/outbox',
    operationId: 'adminListOutbox',
    cli: { command: 'outbox list' },
    summary: 'The e-mails kept instead of sent (no SMTP_URL), newest first',
    params: PracticeParams,
    querystring: Type.Object(PagingQuery, { additionalProperties: false }),
    successStatus: 200,
    response: ListOf(OutboxMessage, 'OutboxMessageList'),
    handler: async ({ trx, deps, params, query }) => {
      const limit = query.limit ?? 50;
      const filters = { practiceId: params.practiceId };
      const position = query.cursor ? deps.cursors.decode('outbox', filters, query.cursor) : undefined;
      const before = position ? { createdAt: String(position[0]), id: String(position[1]) } : undefined;
      const rows = await outboxPage(trx, params.practiceId, before, limit);
      return {
        body: pageOf(
          rows,
          limit,
          (r) => ({
            object: 'outbox_message' as const,
            id: r.id,
            notificationId: r.notification_id,
            to: r.recipient,
            subject: r.subject,
            text: r.body,
            attachment: r.attachment_name
              ? { filename: r.attachment_name, size: Number(r.attachment_size) }
              : null,
            createdAt: r.created_at.toISOString(),
          }),
          (r) => [r.created_at.toISOString(), r.id],
          (p) => deps.cursors.encode('outbox', filters, p),
        ),
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/outbox/:messageId/attachment',
    operationId: 'adminGetOutboxAttachment',
    cli: { command: 'outbox attachment' },
    summary: "An outbox message's attachment (the patient's account as PDF)",
    params: MessageParams,
    ...pdfAnswer('The attachment as sent.'),
    handler: async ({ trx, params }) => {
      const { filename, bytes } = await outboxAttachment(trx, params.practiceId, params.messageId);
      return { body: '', file: { contentType: 'application/pdf', filename, render: async () => bytes } };
    },
  }),
];
