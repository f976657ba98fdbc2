// What the medical scheme has paid on an invoice (its remittances less what it took back), kept on the
// invoice beside amount_paid so that every read of an invoice can show the patient who paid what
// (`paidByScheme`, `paidByPatient`) without adding up payments. Filled from the payments already
// recorded; src/invoices/payments.ts keeps it with every insurer payment. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE invoices ADD COLUMN paid_by_insurer bigint NOT NULL DEFAULT 0;
    UPDATE invoices i SET paid_by_insurer = p.paid
      FROM (SELECT practice_id, invoice_id, sum(amount) AS paid FROM payments
             WHERE source = 'insurer' GROUP BY practice_id, invoice_id) p
     WHERE i.practice_id = p.practice_id AND i.id = p.invoice_id;
  `,
  );
}
