// Owns the practice_prices table: a practice's own prices and its practitioners' favourites.
import type { Trx } from '../platform/db/transaction.ts';
import { newId } from '../platform/ids.ts';

/** Sets the price of a code for the practice, or for one practitioner: one row per code and practitioner. */
export async function upsertPrice(
  trx: Trx,
  practiceId: string,
  price: { system: string; code: string; amount: number; practitionerId: string | null },
  now: Date,
) {
  return trx
    .insertInto('practice_prices')
    .values({
      practice_id: practiceId,
      id: newId('price'),
      system: price.system,
      code: price.code,
      practitioner_id: price.practitionerId,
      amount: price.amount,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['practice_id', 'system', 'code', 'practitioner_id']).doUpdateSet((eb) => ({
        amount: eb.ref('excluded.amount'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listPrices(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('practice_prices')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('system')
    .orderBy('code')
    .orderBy('id')
    .execute();
}

/** Deletes one price; false when the practice has no such price. */
export async function deletePrice(trx: Trx, practiceId: string, priceId: string): Promise<boolean> {
  const deleted = await trx
    .deleteFrom('practice_prices')
    .where('practice_id', '=', practiceId)
    .where('id', '=', priceId)
    .executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}
