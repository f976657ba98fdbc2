// Owns marking invoices overdue: an issued or partially paid invoice whose due date has passed in its
// practice's time zone becomes overdue. Run by the worker; safe with several workers (rows taken
// with SKIP LOCKED) and repeatable.
import { sql } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import { practiceBilling, touchInvoice } from './service.ts';

const BATCH = 200;

export async function markOverdueInvoices(db: Database, now: Date): Promise<number> {
  return asOperator(db, async (trx) => {
    const due = await sql<{ practice_id: string; id: string }>`
      SELECT i.practice_id, i.id
        FROM invoices i JOIN practices p ON p.id = i.practice_id
       WHERE i.status IN ('issued', 'partially_paid')
         AND i.due_date < (${now}::timestamptz AT TIME ZONE p.timezone)::date
       ORDER BY i.practice_id, i.id
       LIMIT ${BATCH}
       FOR UPDATE OF i SKIP LOCKED`.execute(trx);
    for (const row of due.rows) {
      await touchInvoice(trx, await practiceBilling(trx, row.practice_id), row.id, { status: 'overdue' });
    }
    return due.rows.length;
  });
}
