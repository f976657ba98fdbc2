// The invoice's closing states and the insurer's take-back: an invoice that is cancelled, written
// off or marked entered in error records why and when; a reversal confirmed by the insurer takes
// back what the insurer paid as a negative insurer payment (patients' payments stay positive).
// Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE invoices
      ADD COLUMN closed_reason text CHECK (length(closed_reason) <= 500),
      ADD COLUMN closed_at timestamptz;

    ALTER TABLE payments DROP CONSTRAINT payments_amount_check;
    ALTER TABLE payments ADD CONSTRAINT payments_amount_check
      CHECK (amount > 0 OR (amount < 0 AND source = 'insurer'));
  `,
  );
}
