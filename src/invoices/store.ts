// Owns the invoice tables: invoices, their lines and visits, the per-practice invoice numbering, and
// the payments and refunds on an invoice.
import { type Insertable, type RawBuilder, type Selectable, sql, type Updateable } from 'kysely';
import { renumberInvoiceNotifications } from '../notifications/store.ts';
import { pastPosition } from '../paging/keyset.ts';
import { safeHighWaterMark } from '../platform/db/change-feed.ts';
import { childRows } from '../platform/db/child-rows.ts';
import { addLateText } from '../platform/db/late-text.ts';
import type { InvoiceLinesTable, InvoicesTable, PaymentsTable, RefundsTable } from '../platform/db/tables.ts';
import { runsDistributed, type Trx } from '../platform/db/transaction.ts';
import { writeAnsweredLater, writeUnanswered } from '../platform/db/unanswered-writes.ts';
import { practiceTimezoneOf } from '../practices/store.ts';
import type { InvoiceStatus } from './schemas.ts';

export type InvoiceRow = Selectable<InvoicesTable>;
export type LineRow = Selectable<InvoiceLinesTable>;

export interface InvoiceRecord {
  invoice: InvoiceRow;
  lines: LineRow[];
  encounterIds: string[];
}

/**
 * Gives the invoice the practice's next invoice number, as the last write of the transaction that
 * creates the invoice: deferred, it goes out in the COMMIT's own write, so the practice's counter row is
 * locked from this statement to the commit and across no round trip. Numbers are gap-free (a rollback
 * gives the number back) while other invoice work of the practice waits only for this statement and
 * the commit. Until then the invoice carries its provisional number, which stands for the number in
 * what the transaction still writes and answers (src/platform/db/late-text.ts): deferred writes queued
 * after this one (the claim's submission, the stored answer) and the request's answer take the number.
 * Issued notifications written earlier in the transaction are renumbered with it.
 */
export async function numberInvoiceAtCommit(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
  prefix: string,
  provisional: { number: string; notifiedAt: Date | null },
): Promise<void> {
  const read = sql<string>`(SELECT number FROM invoices WHERE practice_id = ${practiceId} AND id = ${invoiceId})`;
  const numbered = runsDistributed(trx)
    ? await numberOnTheNode(trx, practiceId, invoiceId, prefix, { ...provisional, read })
    : await writeAnsweredLater<{ number: string }>(
        trx,
        sql`
    WITH n AS (
      INSERT INTO invoice_clocks AS c (practice_id, last_number) VALUES (${practiceId}, 1)
      ON CONFLICT (practice_id) DO UPDATE SET last_number = c.last_number + 1
      RETURNING ${invoiceNumber(prefix, sql`last_number`)} AS number
    ),
    numbered AS (
      UPDATE invoices i SET number = n.number FROM n
      WHERE i.practice_id = ${practiceId} AND i.id = ${invoiceId}
      RETURNING i.number
    ),
    told AS (${renumberInvoiceNotifications(practiceId, invoiceId, provisional, sql`(SELECT number FROM n)`)})
    SELECT number FROM numbered`,
      );
  addLateText(trx, {
    placeholder: provisional.number,
    read,
    // The statement updates the invoice this transaction inserted and holds: it answers one row.
    value: async () => (await numbered.rows())[0]!.number,
    known: () => numbered.known()?.[0]?.number,
  });
}

/** The practice's `prefix` and a counter's value, as an invoice number (at least six digits). */
const invoiceNumber = (prefix: string, counter: RawBuilder<unknown>) =>
  sql<string>`${prefix} || lpad(${counter}::text, greatest(6, length(${counter}::text)), '0')`;

/**
 * The numbering on a distributed database (Citus): the counter, the invoice and its notifications
 * written by three statements, each sent to the practice's node alone, deferred together into the
 * COMMIT's write. Citus runs a statement whose WITH writes in steps, passing the number through the
 * coordinator (intermediate results): round trips between the nodes while the counter is locked, and a
 * practice on the coordinator committing with two-phase commit with itself (docs/scale-out.md).
 */
async function numberOnTheNode(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
  prefix: string,
  provisional: { number: string; notifiedAt: Date | null; read: RawBuilder<string> },
) {
  await writeUnanswered(
    trx,
    sql`INSERT INTO invoice_clocks AS c (practice_id, last_number) VALUES (${practiceId}, 1)
        ON CONFLICT (practice_id) DO UPDATE SET last_number = c.last_number + 1`,
  );
  const numbered = await writeAnsweredLater<{ number: string }>(
    trx,
    sql`UPDATE invoices i SET number = ${invoiceNumber(prefix, sql`c.last_number`)} FROM invoice_clocks c
        WHERE c.practice_id = ${practiceId} AND i.practice_id = ${practiceId} AND i.id = ${invoiceId}
        RETURNING i.number`,
  );
  await writeUnanswered(
    trx,
    renumberInvoiceNotifications(practiceId, invoiceId, provisional, provisional.read),
  );
  return numbered;
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

function encounterIdsOfInvoice(practiceId: string, invoiceId: string) {
  return sql<string[]>`ARRAY(
    SELECT e.encounter_id FROM invoice_encounters e
    WHERE e.practice_id = ${practiceId} AND e.invoice_id = ${invoiceId} ORDER BY e.encounter_id)`;
}

/**
 * One invoice with its lines and visits. Unlocked, that is one statement. With forUpdate the row is
 * locked first and its parts read by a second statement: a statement that waited for the lock still
 * reads with the snapshot it started with, so lines read in the locking statement could predate the
 * change the lock waited for.
 */
export async function findInvoice(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<InvoiceRecord | undefined> {
  if (forUpdate) {
    const invoice = await findInvoiceRow(trx, practiceId, id, true);
    if (!invoice) return undefined;
    const parts = await trx
      .selectNoFrom([
        childRows('invoice_lines', 'invoice_id', practiceId, id).as('lines'),
        encounterIdsOfInvoice(practiceId, id).as('encounter_ids'),
      ])
      .executeTakeFirstOrThrow();
    return { invoice, lines: parts.lines, encounterIds: parts.encounter_ids };
  }
  const row = await trx
    .selectFrom('invoices')
    .selectAll()
    .select([
      childRows('invoice_lines', 'invoice_id', practiceId, id).as('record_lines'),
      encounterIdsOfInvoice(practiceId, id).as('record_encounter_ids'),
    ])
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  const { record_lines: lines, record_encounter_ids: encounterIds, ...invoice } = row;
  return { invoice, lines, encounterIds };
}

export interface InvoiceFilters {
  updatedSince?: string | undefined;
  patientId?: string | undefined;
  encounterId?: string | undefined;
  status?: InvoiceStatus | undefined;
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
          .where('ie.practice_id', '=', practiceId)
          .whereRef('ie.invoice_id', '=', 'i.id')
          .where('ie.encounter_id', '=', encounterId),
      ),
    );
  }
  if (after) {
    query = query.where(
      pastPosition('asc', [
        { column: 'i.updated_at', value: new Date(after.updatedAt), type: 'timestamptz' },
        { column: 'i.id', value: after.id, type: 'text' },
      ]),
    );
  }
  return query.execute();
}

/** The live invoice an encounter is billed on, if any. */
export async function liveInvoiceOfEncounter(trx: Trx, practiceId: string, encounterId: string) {
  return (
    trx
      .selectFrom('invoice_encounters')
      .select('invoice_id')
      .where('practice_id', '=', practiceId)
      .where('encounter_id', '=', encounterId)
      // Written as the partial index's own predicate, so that a plan made for any values still uses it.
      .where(sql<boolean>`live`)
      .executeTakeFirst()
  );
}

/** A new invoice with its visit and its lines, in one statement; answers them as inserted. */
export async function insertInvoice(
  trx: Trx,
  invoice: Insertable<InvoicesTable>,
  encounterId: string,
  lines: Insertable<InvoiceLinesTable>[],
): Promise<InvoiceRecord> {
  const link = { practice_id: invoice.practice_id, invoice_id: invoice.id, encounter_id: encounterId };
  const withInvoice = trx
    .with('new_invoice', (db) => db.insertInto('invoices').values(invoice).returningAll())
    .with('new_link', (db) => db.insertInto('invoice_encounters').values(link));
  const row =
    lines.length > 0
      ? await withInvoice
          .with('new_lines', (db) => db.insertInto('invoice_lines').values(lines).returningAll())
          .selectFrom('new_invoice')
          .selectAll()
          .select(
            sql<LineRow[]>`(SELECT jsonb_agg(to_jsonb(l) ORDER BY l.position) FROM new_lines l)`.as(
              'record_lines',
            ),
          )
          .executeTakeFirstOrThrow()
      : {
          ...(await withInvoice.selectFrom('new_invoice').selectAll().executeTakeFirstOrThrow()),
          record_lines: [] as LineRow[],
        };
  const { record_lines: lineRows, ...inserted } = row;
  return { invoice: inserted, lines: lineRows, encounterIds: [encounterId] };
}

export async function insertLine(trx: Trx, line: Insertable<InvoiceLinesTable>): Promise<void> {
  await trx.insertInto('invoice_lines').values(line).execute();
}

export async function updateLine(
  trx: Trx,
  practiceId: string,
  lineId: string,
  values: Updateable<InvoiceLinesTable>,
): Promise<void> {
  await trx
    .updateTable('invoice_lines')
    .set(values)
    .where('practice_id', '=', practiceId)
    .where('id', '=', lineId)
    .execute();
}

export async function deleteLineRow(trx: Trx, practiceId: string, lineId: string): Promise<void> {
  await trx
    .deleteFrom('invoice_lines')
    .where('practice_id', '=', practiceId)
    .where('id', '=', lineId)
    .execute();
}

/** The totals of an invoice's lines. */
export async function lineTotals(trx: Trx, practiceId: string, invoiceId: string): Promise<number[]> {
  const lines = await trx
    .selectFrom('invoice_lines')
    .select('total')
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .execute();
  return lines.map((l) => Number(l.total));
}

/** The earliest date of service of an invoice's lines (YYYY-MM-DD), or null when it has none. */
export async function earliestServiceDate(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
): Promise<string | null> {
  const row = await trx
    .selectFrom('invoice_lines')
    .select((eb) => eb.fn.min<string | null>('service_date').as('earliest'))
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .executeTakeFirst();
  return row?.earliest ?? null;
}

/** Changes an invoice; answers what its status rule reads. */
export async function updateInvoice(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
  set: Updateable<InvoicesTable>,
) {
  return trx
    .updateTable('invoices')
    .set(set)
    .where('practice_id', '=', practiceId)
    .where('id', '=', invoiceId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Releases an invoice's visits, so they can be billed again. */
export async function releaseVisits(trx: Trx, practiceId: string, invoiceId: string): Promise<void> {
  await trx
    .updateTable('invoice_encounters')
    .set({ live: false })
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .execute();
}

export async function insertPayment(trx: Trx, payment: Insertable<PaymentsTable>) {
  return trx.insertInto('payments').values(payment).returningAll().executeTakeFirstOrThrow();
}

/**
 * The invoice's row, locked until commit, with what the insurer has paid on it and not taken back
 * (`insurer_paid`), in one statement; undefined when there is none. The payments are filtered by the
 * practice itself, so that a distributed database (Citus) sends the statement, lock and all, to the
 * practice's node alone.
 */
export async function lockInvoiceRowWithInsurerPaid(trx: Trx, practiceId: string, id: string) {
  return trx
    .selectFrom('invoices')
    .selectAll()
    .select(
      sql<number>`(SELECT coalesce(sum(p.amount), 0) FROM payments p
        WHERE p.practice_id = ${practiceId} AND p.invoice_id = invoices.id AND p.source = 'insurer')`.as(
        'insurer_paid',
      ),
    )
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** What the insurer has paid on the invoice, net of what was taken back. */
export async function insurerPaid(trx: Trx, practiceId: string, invoiceId: string): Promise<number> {
  const row = await trx
    .selectFrom('payments')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount'), eb.lit(0)).as('total'))
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .where('source', '=', 'insurer')
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function findPayment(trx: Trx, practiceId: string, invoiceId: string, paymentId: string) {
  return trx
    .selectFrom('payments')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .where('id', '=', paymentId)
    .executeTakeFirst();
}

export async function insertRefund(trx: Trx, refund: Insertable<RefundsTable>) {
  return trx.insertInto('refunds').values(refund).returningAll().executeTakeFirstOrThrow();
}

export async function findRefund(trx: Trx, practiceId: string, invoiceId: string, refundId: string) {
  return trx
    .selectFrom('refunds')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .where('id', '=', refundId)
    .executeTakeFirst();
}

/** An invoice's refunds, oldest first. */
export async function listRefunds(trx: Trx, practiceId: string, invoiceId: string) {
  return trx
    .selectFrom('refunds')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .orderBy('refunded_at')
    .orderBy('id')
    .execute();
}

/** An invoice's payments, oldest first. */
export async function listPayments(trx: Trx, practiceId: string, invoiceId: string) {
  return trx
    .selectFrom('payments')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .orderBy('received_at')
    .orderBy('id')
    .execute();
}

const overdue = (now: Date) => sql`
  i.status = 'issued'
  AND i.balance_due > 0
  AND i.due_date < (${now}::timestamptz AT TIME ZONE ${practiceTimezoneOf('i.practice_id')})::date`;

/** Practices with issued invoices overdue at `now` (in their own time zones), at most `limit`; locks nothing. */
export async function practicesWithOverdueInvoices(trx: Trx, now: Date, limit: number): Promise<string[]> {
  const found = await sql<{ practice_id: string }>`
    SELECT DISTINCT i.practice_id FROM invoices i WHERE ${overdue(now)}
     ORDER BY i.practice_id LIMIT ${limit}`.execute(trx);
  return found.rows.map((row) => row.practice_id);
}

/**
 * One practice's issued invoices with a balance whose due date has passed in its time zone, at most
 * `limit`, locked for this transaction; rows another transaction holds are skipped.
 */
export async function takeOverdueInvoices(trx: Trx, practiceId: string, now: Date, limit: number) {
  const due = await sql<{ practice_id: string; id: string }>`
    SELECT i.practice_id, i.id
      FROM invoices i
     WHERE i.practice_id = ${practiceId} AND ${overdue(now)}
     ORDER BY i.id
     LIMIT ${limit}
     FOR UPDATE OF i SKIP LOCKED`.execute(trx);
  return due.rows;
}

/**
 * Unlinks the patient's invoices from the person (a de-identification): the recipient's name and the
 * lines' diagnosis codes are removed; amounts, tariff codes, payments and claims stay for the books.
 * The invoices are stamped `changedAt` so that the updatedSince feed lists them again.
 */
export async function unlinkInvoicesFromPerson(
  trx: Trx,
  practiceId: string,
  patientId: string,
  changedAt: Date,
): Promise<void> {
  const theirs = trx
    .selectFrom('invoices')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  await trx
    .updateTable('invoice_lines')
    .set({ diagnoses: JSON.stringify([]) })
    .where('practice_id', '=', practiceId)
    .where('invoice_id', 'in', theirs)
    .execute();
  await trx
    .updateTable('invoices')
    .set({ recipient_name: null, updated_at: changedAt })
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId)
    .execute();
}
