// Invoice lines remember whether their price is still to be set: `unpriced` is true on a line bill
// made from a procedure no rate was found for (priced 0, pricingSource null), and false on every line
// whose price someone gave (a rate found, or a line added or replaced through the API, 0 included).
// An invoice with an unpriced line cannot be issued (src/invoices/service.ts). Existing lines bill
// made at 0 without a rate are marked unpriced where they are still bill's own (no pricingSource, at
// 0, made from a procedure); a line replaced by hand at 0 cannot be told apart from one and is marked
// too, which only asks for its price to be confirmed before its invoice is issued again. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE invoice_lines ADD COLUMN unpriced boolean NOT NULL DEFAULT false;
    UPDATE invoice_lines SET unpriced = true
     WHERE procedure_id IS NOT NULL AND pricing_source IS NULL AND unit_price = 0;
  `,
  );
}
