// Owns the queries over practices and their practitioners (src/table-owners.ts).
import { type Insertable, type RawBuilder, sql, type Updateable } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import type { PracticesTable, PractitionersTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { signalKeyChange } from '../platform/key-changes.ts';

export async function insertPractice(trx: Trx, row: Insertable<PracticesTable>) {
  return trx.insertInto('practices').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findPractice(trx: Trx, practiceId: string) {
  return trx.selectFrom('practices').selectAll().where('id', '=', practiceId).executeTakeFirst();
}

export async function listPracticeRows(trx: Trx) {
  return trx.selectFrom('practices').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function updateIntegrations(trx: Trx, practiceId: string, enabled: boolean, now: Date) {
  const row = await trx
    .updateTable('practices')
    .set({ integrations_enabled: enabled, updated_at: now })
    .where('id', '=', practiceId)
    .returningAll()
    .executeTakeFirst();
  if (row) await signalKeyChange(trx, practiceId);
  return row;
}

/** Sets a practice's name and account details (the columns given); undefined when there is no such practice. */
export async function updateAccountDetails(
  trx: Trx,
  practiceId: string,
  columns: Updateable<PracticesTable>,
  now: Date,
) {
  return trx
    .updateTable('practices')
    .set({ ...columns, updated_at: now })
    .where('id', '=', practiceId)
    .returningAll()
    .executeTakeFirst();
}

/** Replaces a practice's billing settings (VAT rate, payment terms, invoice number prefix, retention). */
export async function updateBillingSettings(
  trx: Trx,
  practiceId: string,
  settings: {
    vatRateBasisPoints: number;
    paymentTermsDays: number;
    invoiceNumberPrefix: string;
    retentionYears: number;
  },
  now: Date,
): Promise<void> {
  await trx
    .updateTable('practices')
    .set({
      vat_rate_basis_points: settings.vatRateBasisPoints,
      payment_terms_days: settings.paymentTermsDays,
      invoice_number_prefix: settings.invoiceNumberPrefix,
      retention_years: settings.retentionYears,
      updated_at: now,
    })
    .where('id', '=', practiceId)
    .execute();
}

/** The time zone of the practice whose id is the column `practiceIdColumn`, as an SQL expression. */
export function practiceTimezoneOf(practiceIdColumn: string): RawBuilder<string> {
  return sql<string>`(SELECT p.timezone FROM practices p WHERE p.id = ${sql.ref(practiceIdColumn)})`;
}

export async function insertPractitioner(trx: Trx, row: Insertable<PractitionersTable>) {
  return trx.insertInto('practitioners').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Every practitioner of the practice, oldest first. */
export async function allPractitionerRows(trx: Trx, practiceId: string) {
  return trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Oldest first; `after` is the (createdAt, id) of the previous page's last practitioner. */
export async function listPractitionerRows(
  trx: Trx,
  practiceId: string,
  filters: { active?: boolean | undefined },
  after: { createdAt: string; id: string } | undefined,
  limit: number,
) {
  let query = trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit + 1);
  if (filters.active !== undefined) query = query.where('active', '=', filters.active);
  if (after) {
    query = query.where(
      pastPosition('asc', [
        { column: 'created_at', value: new Date(after.createdAt), type: 'timestamptz' },
        { column: 'id', value: after.id, type: 'text' },
      ]),
    );
  }
  return query.execute();
}

export async function findPractitioner(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The practitioner's default code systems, or undefined when the id names no practitioner of the practice. */
export async function findPractitionerDefaults(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('practitioners')
    .select(['id', 'default_condition_system', 'default_procedure_system'])
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Notes that the practice's data was exported at `at` (a deletion asks for an export first). */
export async function markPracticeExported(trx: Trx, practiceId: string, at: Date): Promise<void> {
  await trx.updateTable('practices').set({ exported_at: at }).where('id', '=', practiceId).execute();
}

/** Tells every process's key cache that the practice's keys changed (they are about to be deleted). */
export async function signalPracticeKeysChanged(trx: Trx, practiceId: string): Promise<void> {
  await signalKeyChange(trx, practiceId);
}
