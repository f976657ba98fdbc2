// Owns the queries over a practice's notifications and its mail outbox (src/table-owners.ts): what the
// practice and its patients are told about invoices and webhook endpoints, newest first, what became
// of each e-mail, and the messages kept instead of sent when no SMTP server is configured.
import { type Insertable, type RawBuilder, sql } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import type { MailOutboxTable, NotificationsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { writeUnanswered } from '../platform/db/unanswered-writes.ts';

/** Nobody reads the insert's answer: it goes out with the transaction's next statement. */
export async function insertNotification(
  trx: Trx,
  notification: Insertable<NotificationsTable>,
): Promise<void> {
  await writeUnanswered(trx, trx.insertInto('notifications').values(notification));
}

/** A practice's notifications, newest first; `before` is the previous page's last (createdAt, id). */
export async function listNotifications(
  trx: Trx,
  practiceId: string,
  before: { createdAt: string; id: string } | undefined,
  limit: number,
  subjectId?: string,
) {
  let query = trx
    .selectFrom('notifications')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (subjectId !== undefined) query = query.where('subject_id', '=', subjectId);
  if (before) {
    query = query.where(
      pastPosition('desc', [
        { column: 'created_at', value: new Date(before.createdAt), type: 'timestamptz' },
        { column: 'id', value: before.id, type: 'text' },
      ]),
    );
  }
  return query.execute();
}

/**
 * The statement that replaces an invoice's provisional number in the notifications written about it
 * at `notifiedAt` by the number `number` reads (SQL: a scalar subquery of the statement, or of the
 * transaction, that numbers the invoice).
 */
export function renumberInvoiceNotifications(
  practiceId: string,
  invoiceId: string,
  provisional: { number: string; notifiedAt: Date | null },
  number: RawBuilder<string>,
): RawBuilder<unknown> {
  return sql`
      UPDATE notifications o SET message = replace(o.message, ${provisional.number}, ${number})
      WHERE o.practice_id = ${practiceId} AND o.created_at = ${provisional.notifiedAt}
        AND o.subject_type = 'invoice' AND o.subject_id = ${invoiceId}
    `;
}

export type Delivery = 'queued' | 'sent' | 'failed' | 'no_address';

export async function findNotification(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('notifications')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Records what became of a notification's e-mail. */
export async function recordDelivery(
  trx: Trx,
  practiceId: string,
  id: string,
  delivery: Delivery,
  detail: string,
  now: Date,
): Promise<void> {
  await trx
    .updateTable('notifications')
    .set({ delivery, delivery_detail: detail.slice(0, 1000), delivery_updated_at: now })
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .execute();
}

/** Keeps a message in the outbox (no SMTP server configured); a second copy of one notification is not kept. */
export async function insertOutboxMessage(trx: Trx, message: Insertable<MailOutboxTable>): Promise<void> {
  await trx
    .insertInto('mail_outbox')
    .values(message)
    .onConflict((c) => c.columns(['practice_id', 'notification_id']).doNothing())
    .execute();
}

/** A practice's outbox, newest first, without the attachments' bytes. */
export async function listOutbox(
  trx: Trx,
  practiceId: string,
  before: { createdAt: string; id: string } | undefined,
  limit: number,
) {
  let query = trx
    .selectFrom('mail_outbox')
    .select([
      'id',
      'notification_id',
      'recipient',
      'subject',
      'body',
      'attachment_name',
      'created_at',
      sql<number>`coalesce(octet_length(attachment), 0)`.as('attachment_size'),
    ])
    .where('practice_id', '=', practiceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (before) {
    query = query.where(
      pastPosition('desc', [
        { column: 'created_at', value: new Date(before.createdAt), type: 'timestamptz' },
        { column: 'id', value: before.id, type: 'text' },
      ]),
    );
  }
  return query.execute();
}

/** One message of the outbox with its attachment. */
export async function findOutboxMessage(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('mail_outbox')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** What a de-identified patient's notifications say of their e-mail instead of the mail server's answer. */
export const DE_IDENTIFIED_DELIVERY_DETAIL = 'removed when the patient was de-identified';

/**
 * Forgets what the e-mails sent to the patient about these invoices said of them (a
 * de-identification): the outbox's copies, each holding the patient's address and their account, and
 * the mail server's answers recorded on the notifications, which may quote the address it refused.
 */
export async function forgetPatientMail(trx: Trx, practiceId: string, invoiceIds: string[]): Promise<void> {
  if (invoiceIds.length === 0) return;
  const patientMail = trx
    .selectFrom('notifications')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('recipient', '=', 'patient')
    .where('subject_id', 'in', invoiceIds);
  await trx
    .deleteFrom('mail_outbox')
    .where('practice_id', '=', practiceId)
    .where('notification_id', 'in', patientMail)
    .execute();
  await trx
    .updateTable('notifications')
    .set({ delivery_detail: DE_IDENTIFIED_DELIVERY_DETAIL })
    .where('practice_id', '=', practiceId)
    .where('id', 'in', patientMail)
    .where('delivery_detail', 'is not', null)
    .execute();
}
