// What an invoice owes, to whom, and what was given up, as columns computed from its status and money:
// a closed invoice (cancelled, entered in error, written off) owes nothing (`balance_due` 0); the
// balance given up by a write-off is `amount_written_off`; and money received beyond the total (an
// insurer's remittance recorded in full after the patient paid at the desk) is `credit_due`, what the
// practice owes the patient until a refund settles it. `balance_due` is never negative. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE invoices DROP COLUMN balance_due;
    ALTER TABLE invoices ADD COLUMN balance_due bigint GENERATED ALWAYS AS (
      CASE WHEN status IN ('cancelled', 'entered_in_error', 'written_off') THEN 0
           ELSE greatest(total_gross - amount_paid, 0) END) STORED;
    ALTER TABLE invoices ADD COLUMN amount_written_off bigint GENERATED ALWAYS AS (
      CASE WHEN status = 'written_off' THEN greatest(total_gross - amount_paid, 0) ELSE 0 END) STORED;
    ALTER TABLE invoices ADD COLUMN credit_due bigint GENERATED ALWAYS AS (
      greatest(amount_paid - total_gross, 0)) STORED;
  `,
  );
}
