// Refunds: money the practice gave back to the patient on an invoice. A refund is its own record,
// never a negative patient payment, so a payment list still reads as money received; the invoice's
// amount paid is lowered by each refund (src/invoices/refunds.ts). Forward-only.
import type { Kysely } from 'kysely';
import { enableTenantSecurity, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE TABLE refunds (
      practice_id text NOT NULL,
      id text NOT NULL,
      invoice_id text NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      currency char(3) NOT NULL,
      method text NOT NULL,
      reference text,
      reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
      refunded_at timestamptz NOT NULL,
      PRIMARY KEY (practice_id, id),
      FOREIGN KEY (practice_id, invoice_id) REFERENCES invoices (practice_id, id)
    );
    CREATE INDEX refunds_invoice ON refunds (practice_id, invoice_id, refunded_at, id);
  `,
  );
  await enableTenantSecurity(db, 'refunds', { privileges: 'SELECT, INSERT' });
}
