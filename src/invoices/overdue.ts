// Owns marking invoices overdue: an issued invoice nothing was paid on whose due date has passed in
// its practice's time zone becomes overdue (the status rule itself is `openStatus`). Run by the
// worker; safe with several workers (rows taken with SKIP LOCKED) and repeatable. The practices with
// overdue invoices are found first, without locks, and each practice's invoices are then taken and
// marked in a transaction of their own: no statement locks rows of two practices (docs/scale-out.md).
import { dateIn } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator } from '../platform/db/transaction.ts';
import { practiceBilling } from '../practices/service.ts';
import { touchInvoice } from './service.ts';
import { practicesWithOverdueInvoices, takeOverdueInvoices } from './store.ts';

const BATCH = 200;

/** Marks up to BATCH invoices overdue at `now`; answers how many it marked. */
export async function markOverdueInvoices(db: Database, now: Date): Promise<number> {
  const practices = await asOperator(db, (trx) => practicesWithOverdueInvoices(trx, now, BATCH));
  let marked = 0;
  for (const practiceId of practices) {
    if (marked >= BATCH) break;
    marked += await asOperator(db, async (trx) => {
      const due = await takeOverdueInvoices(trx, practiceId, now, BATCH - marked);
      if (due.length === 0) return 0;
      const billing = await practiceBilling(trx, practiceId);
      for (const row of due) {
        await touchInvoice(trx, billing, row.id, {}, { settleOn: dateIn(billing.timezone, now) });
      }
      return due.length;
    });
  }
  return marked;
}
