// Owns the queries over the governing bodies and their tariff prices (src/table-owners.ts), which only
// the catalogue loader writes: upserts keyed on natural keys.
import type { Insertable, Kysely } from 'kysely';
import type { GoverningBodyRatesTable, Tables } from '../platform/db/tables.ts';

export async function upsertGoverningBody(db: Kysely<Tables>, id: string, name: string): Promise<void> {
  await db
    .insertInto('governing_bodies')
    .values({ id, name })
    .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ name: eb.ref('excluded.name') })))
    .execute();
}

export async function upsertGoverningBodyRates(
  db: Kysely<Tables>,
  rows: Insertable<GoverningBodyRatesTable>[],
): Promise<void> {
  await db
    .insertInto('governing_body_rates')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['governing_body_id', 'system', 'code'])
        .doUpdateSet((eb) => ({ amount: eb.ref('excluded.amount') })),
    )
    .execute();
}
