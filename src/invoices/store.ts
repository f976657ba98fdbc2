// Owns the invoice tables: invoices, their lines and visits, and the per-practice invoice numbering.
import { type Selectable, sql } from 'kysely';
import { safeHighWaterMark } from '../platform/db/change-feed.ts';
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
 * Gives the invoice the practice's next invoice number. Meant as the last data statement of the
 * transaction that creates the invoice: the practice's counter row stays locked from here until
 * commit, so numbers are gap-free (a rollback gives the number back) while other invoice work of the
 * practice waits only for this statement and the commit. Issued notifications written earlier in the
 * transaction name the invoice by its provisional number, which is replaced here too.
 */
export async function assignInvoiceNumber(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
  prefix: string,
  provisional: { number: string; notifiedAt: Date | null },
): Promise<string> {
  const result = await sql<{ number: string }>`
    WITH n AS (
      INSERT INTO invoice_clocks AS c (practice_id, last_number) VALUES (${practiceId}, 1)
      ON CONFLICT (practice_id) DO UPDATE SET last_number = c.last_number + 1
      RETURNING ${prefix} || lpad(last_number::text, greatest(6, length(last_number::text)), '0') AS number
    ),
    numbered AS (
      UPDATE invoices i SET number = n.number FROM n
      WHERE i.practice_id = ${practiceId} AND i.id = ${invoiceId}
      RETURNING i.number
    ),
    told AS (
      UPDATE notifications o SET message = replace(o.message, ${provisional.number}, n.number) FROM n
      WHERE o.practice_id = ${practiceId} AND o.created_at = ${provisional.notifiedAt}
        AND o.subject_type = 'invoice' AND o.subject_id = ${invoiceId}
    )
    SELECT number FROM numbered`.execute(trx);
  return result.rows[0]!.number;
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

/**
 * Oldest change first; `after` is the (updatedAt, id) of the previous page's last invoice. Only
 * changes stamped before the change feed's safe high-water mark are listed, so a change that
 * commits later is never stamped before one already listed.
 */
export async function listInvoiceRows(
  trx: Trx,
  practiceId: string,
  filters: InvoiceFilters,
  after: { updatedAt: string; id: string } | undefined,
  limit: number,
): Promise<InvoiceRow[]> {
  const before = await safeHighWaterMark(trx);
  let query = trx
    .selectFrom('invoices as i')
    .selectAll('i')
    .where('i.practice_id', '=', practiceId)
    .where('i.updated_at', '<', before)
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
