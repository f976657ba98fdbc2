// Owns marking invoices overdue: an issued invoice nothing was paid on whose due date has passed in
// its practice's time zone becomes overdue (the status rule itself is `openStatus`). Run by the
// worker; safe with several workers (rows taken with SKIP LOCKED) and repeatable.
import { sql } from 'kysely';
import { dateIn } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import { practiceBilling } from '../practices/service.ts';
import { touchInvoice } from './service.ts';

const BATCH = 200;

export async function markOverdueInvoices(db: Database, now: Date): Promise<number> {
  return asOperator(db, async (trx) => {
    const due = await sql<{ practice_id: string; id: string }>`
      SELECT i.practice_id, i.id
        FROM invoices i JOIN practices p ON p.id = i.practice_id
       WHERE i.status = 'issued'
         AND i.balance_due > 0
         AND i.due_date < (${now}::timestamptz AT TIME ZONE p.timezone)::date
       ORDER BY i.practice_id, i.id
       LIMIT ${BATCH}
       FOR UPDATE OF i SKIP LOCKED`.execute(trx);
    for (const row of due.rows) {
      const billing = await practiceBilling(trx, row.practice_id);
      await touchInvoice(trx, billing, row.id, {}, { settleOn: dateIn(billing.timezone, now) });
    }
    return due.rows.length;
  });
}
