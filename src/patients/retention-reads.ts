// Owns the reads that decide a patient's retention: the last activity (encounter, invoice, payment,
// claim; registration when there is none), the invoices still open and the claims still in flight,
// and the practice's patients whose retention may have ended. Reads only; a cross-owner read declared
// in src/table-owners.ts. Every statement names one practice, in each of its subqueries too (by value:
// Citus sends a statement to the practice's node alone only then; docs/scale-out.md).
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

export interface PatientRetentionRow {
  id: string;
  birth_date: string | null;
  erased: boolean;
  retained_for_life: boolean;
  last_activity_at: Date;
  open_invoices: number;
  claims_in_flight: number;
}

/** Statuses of an invoice that is still open (anything but balanced, cancelled, entered in error, written off). */
const OPEN_INVOICE_STATUSES = ['draft', 'issued', 'amending', 'partially_paid', 'overdue'];
/** Claims the insurer has still to answer. */
const CLAIMS_IN_FLIGHT = ['submitting', 'reversing'];

/** A patient `p`'s last activity, every subquery filtered by the practice itself. */
const lastActivity = (practiceId: string) => sql`GREATEST(
  p.created_at,
  (SELECT max(coalesce(e.end_at, e.start_at)) FROM encounters e
     WHERE e.practice_id = ${practiceId} AND e.patient_id = p.id),
  (SELECT max(i.updated_at) FROM invoices i WHERE i.practice_id = ${practiceId} AND i.patient_id = p.id),
  (SELECT max(pay.received_at) FROM payments pay JOIN invoices i
     ON i.practice_id = pay.practice_id AND i.id = pay.invoice_id
     WHERE pay.practice_id = ${practiceId} AND i.patient_id = p.id),
  (SELECT max(c.updated_at) FROM claims c JOIN invoices i
     ON i.practice_id = c.practice_id AND i.id = c.invoice_id
     WHERE c.practice_id = ${practiceId} AND i.patient_id = p.id))`;

/** The facts of one patient's retention, or undefined when the practice has no such patient. */
export async function patientRetentionRow(
  trx: Trx,
  practiceId: string,
  patientId: string,
): Promise<PatientRetentionRow | undefined> {
  const result = await sql<PatientRetentionRow>`
    SELECT p.id, p.birth_date::text AS birth_date, p.erased_at IS NOT NULL AS erased, p.retained_for_life,
      ${lastActivity(practiceId)} AS last_activity_at,
      (SELECT count(*)::int FROM invoices i WHERE i.practice_id = ${practiceId} AND i.patient_id = p.id
         AND i.status IN (${sql.join(OPEN_INVOICE_STATUSES)})) AS open_invoices,
      (SELECT count(*)::int FROM claims c JOIN invoices i ON i.practice_id = c.practice_id AND i.id = c.invoice_id
         WHERE c.practice_id = ${practiceId} AND i.patient_id = p.id
         AND c.status IN (${sql.join(CLAIMS_IN_FLIGHT)})) AS claims_in_flight
    FROM patients p
    WHERE p.practice_id = ${practiceId} AND p.id = ${patientId}`.execute(trx);
  const row = result.rows[0];
  return row && { ...row, last_activity_at: new Date(row.last_activity_at) };
}

/**
 * Patients of the practice not yet erased nor kept for life, born on or before `bornBy` (21 years before today), whose
 * last activity is before `activeBefore`, with no open invoice and no claim in flight: the candidates
 * for de-identification, each still judged by the retention rule. At most `limit`, by id.
 */
export async function retentionCandidates(
  trx: Trx,
  practiceId: string,
  activeBefore: Date,
  bornBy: string,
  limit: number,
): Promise<string[]> {
  const result = await sql<{ id: string }>`
    SELECT p.id FROM patients p
    WHERE p.practice_id = ${practiceId} AND p.erased_at IS NULL AND NOT p.retained_for_life
      AND p.birth_date <= ${bornBy}::date
      AND ${lastActivity(practiceId)} < ${activeBefore}
      AND NOT EXISTS (SELECT 1 FROM invoices i WHERE i.practice_id = ${practiceId} AND i.patient_id = p.id
        AND i.status IN (${sql.join(OPEN_INVOICE_STATUSES)}))
      AND NOT EXISTS (SELECT 1 FROM claims c JOIN invoices i ON i.practice_id = c.practice_id AND i.id = c.invoice_id
        WHERE c.practice_id = ${practiceId} AND i.patient_id = p.id AND c.status IN (${sql.join(CLAIMS_IN_FLIGHT)}))
    ORDER BY p.id LIMIT ${limit}`.execute(trx);
  return result.rows.map((r) => r.id);
}

/** The ids of the patient's invoices. */
export async function patientInvoiceIds(trx: Trx, practiceId: string, patientId: string): Promise<string[]> {
  const result = await sql<{ id: string }>`
    SELECT id FROM invoices WHERE practice_id = ${practiceId} AND patient_id = ${patientId} ORDER BY id`.execute(
    trx,
  );
  return result.rows.map((r) => r.id);
}

/** The ids of the claims on the patient's invoices. */
export async function patientClaimIds(trx: Trx, practiceId: string, patientId: string): Promise<string[]> {
  const result = await sql<{ id: string }>`
    SELECT c.id FROM claims c JOIN invoices i ON i.practice_id = c.practice_id AND i.id = c.invoice_id
    WHERE c.practice_id = ${practiceId} AND i.patient_id = ${patientId} ORDER BY c.id`.execute(trx);
  return result.rows.map((r) => r.id);
}
