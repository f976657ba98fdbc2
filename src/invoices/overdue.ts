// Owns marking invoices overdue: an issued invoice nothing was paid on whose due date has passed in
// its practice's time zone becomes overdue (the status rule itself is `openStatus`). Run by the
// worker; safe with several workers (rows taken with SKIP LOCKED) and repeatable.
import { dateIn } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import { practiceBilling } from '../practices/service.ts';
import { touchInvoice } from './service.ts';
import { takeOverdueInvoices } from './store.ts';

const BATCH = 200;

export async function markOverdueInvoices(db: Database, now: Date): Promise<number> {
  return asOperator(db, async (trx) => {
    const due = await takeOverdueInvoices(trx, now, BATCH);
    for (const row of due) {
      const billing = await practiceBilling(trx, row.practice_id);
      await touchInvoice(trx, billing, row.id, {}, { settleOn: dateIn(billing.timezone, now) });
    }
    return due.length;
  });
}
