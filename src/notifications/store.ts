// Owns the queries over a practice's notifications (src/table-owners.ts): what the practice is told
// about its invoices and its webhook endpoints, newest first.
import { type Insertable, type RawBuilder, sql } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import type { NotificationsTable } from '../platform/db/tables.ts';
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
) {
  let query = trx
    .selectFrom('notifications')
    .selectAll()
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

/**
 * The statement, meant for a WITH of the statement that numbers an invoice, that replaces the
 * invoice's provisional number in the notifications written about it at `notifiedAt`. The new number
 * is the `number` column of the caller's WITH query named `numberedBy`.
 */
export function renumberInvoiceNotifications(
  practiceId: string,
  invoiceId: string,
  provisional: { number: string; notifiedAt: Date | null },
  numberedBy: string,
): RawBuilder<unknown> {
  return sql`
      UPDATE notifications o SET message = replace(o.message, ${provisional.number}, ${sql.ref(`${numberedBy}.number`)})
      FROM ${sql.table(numberedBy)}
      WHERE o.practice_id = ${practiceId} AND o.created_at = ${provisional.notifiedAt}
        AND o.subject_type = 'invoice' AND o.subject_id = ${invoiceId}
    `;
}
