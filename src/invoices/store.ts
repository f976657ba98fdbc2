// Owns the invoice tables: invoices, their lines and visits, and the per-practice invoice clock.
import { type Selectable, sql } from 'kysely';
import type { InvoiceLinesTable, InvoicesTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';

export type InvoiceRow = Selectable<InvoicesTable>;
export type LineRow = Selectable<InvoiceLinesTable>;

export interface InvoiceRecord {
  invoice: InvoiceRow;
  lines: LineRow[];
  encounterIds: string[];
}

/**
 * Locks the practice's invoice clock for the rest of the transaction and returns the change time for
 * this change (strictly later than every earlier one, in commit order) and, when asked, the next
 * invoice number. Holding the lock until commit is what keeps numbers gap-free and change times
 * ordered like commits.
 */
export async function tickInvoiceClock(
  trx: Trx,
  practiceId: string,
  newNumber: boolean,
): Promise<{ changedAt: Date; number: number }> {
  const result = await sql<{ last_number: number; last_change: Date }>`
    INSERT INTO invoice_clocks AS c (practice_id, last_number, last_change)
    VALUES (${practiceId}, ${newNumber ? 1 : 0}, date_trunc('milliseconds', clock_timestamp()))
    ON CONFLICT (practice_id) DO UPDATE SET
      last_number = c.last_number + ${newNumber ? 1 : 0},
      last_change = greatest(date_trunc('milliseconds', clock_timestamp()), c.last_change + interval '1 millisecond')
    RETURNING last_number, last_change`.execute(trx);
  const row = result.rows[0]!;
  return { changedAt: new Date(row.last_change), number: Number(row.last_number) };
}

export async function findInvoiceRow(trx: Trx, practiceId: string, id: string, forUpdate = false) {
  let query = trx
    .selectFrom('invoices')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function loadRecords(
  trx: Trx,
  practiceId: string,
  invoices: InvoiceRow[],
): Promise<InvoiceRecord[]> {
  if (invoices.length === 0) return [];
  const ids = invoices.map((i) => i.id);
  const lines = await trx
    .selectFrom('invoice_lines')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', 'in', ids)
    .orderBy('invoice_id')
    .orderBy('position')
    .execute();
  const encounters = await trx
    .selectFrom('invoice_encounters')
    .select(['invoice_id', 'encounter_id'])
    .where('practice_id', '=', practiceId)
    .where('invoice_id', 'in', ids)
    .orderBy('encounter_id')
    .execute();
  return invoices.map((invoice) => ({
    invoice,
    lines: lines.filter((l) => l.invoice_id === invoice.id),
    encounterIds: encounters.filter((e) => e.invoice_id === invoice.id).map((e) => e.encounter_id),
  }));
}

export async function findInvoice(trx: Trx, practiceId: string, id: string, forUpdate = false) {
  const row = await findInvoiceRow(trx, practiceId, id, forUpdate);
  if (!row) return undefined;
  return (await loadRecords(trx, practiceId, [row]))[0];
}

export interface InvoiceFilters {
  updatedSince?: string | undefined;
  patientId?: string | undefined;
  encounterId?: string | undefined;
  status?: string | undefined;
}

/** Oldest change first; `after` is the (updatedAt, id) of the previous page's last invoice. */
export async function listInvoiceRows(
  trx: Trx,
  practiceId: string,
  filters: InvoiceFilters,
  after: { updatedAt: string; id: string } | undefined,
  limit: number,
): Promise<InvoiceRow[]> {
  let query = trx
    .selectFrom('invoices as i')
    .selectAll('i')
    .where('i.practice_id', '=', practiceId)
    .orderBy('i.updated_at')
    .orderBy('i.id')
    .limit(limit + 1);
  if (filters.updatedSince) query = query.where('i.updated_at', '>', new Date(filters.updatedSince));
  if (filters.patientId) query = query.where('i.patient_id', '=', filters.patientId);
  if (filters.status) query = query.where('i.status', '=', filters.status);
  if (filters.encounterId) {
    const encounterId = filters.encounterId;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('invoice_encounters as ie')
          .select('ie.invoice_id')
          .whereRef('ie.practice_id', '=', 'i.practice_id')
          .whereRef('ie.invoice_id', '=', 'i.id')
          .where('ie.encounter_id', '=', encounterId),
      ),
    );
  }
  if (after) {
    const at = new Date(after.updatedAt);
    query = query.where((eb) =>
      eb.or([eb('i.updated_at', '>', at), eb.and([eb('i.updated_at', '=', at), eb('i.id', '>', after.id)])]),
    );
  }
  return query.execute();
}

/** The live invoice an encounter is billed on, if any. */
export async function liveInvoiceOfEncounter(trx: Trx, practiceId: string, encounterId: string) {
  return trx
    .selectFrom('invoice_encounters')
    .select('invoice_id')
    .where('practice_id', '=', practiceId)
    .where('encounter_id', '=', encounterId)
    .where('live', '=', true)
    .executeTakeFirst();
}
