// Owns the question whether a practice's code is still used: on a visit, an invoice line or a saved
// price. A read across owners declared in src/table-owners.ts: it writes nothing.
import { sql } from 'kysely';
import type { Trx } from '../platform/db/transaction.ts';

/** Where a code is still used on a patient's record or a saved price; empty when free to delete. */
export async function codeUses(
  trx: Trx,
  practiceId: string,
  system: string,
  code: string,
): Promise<string[]> {
  const result = await sql<{ place: string }>`
    SELECT 'a visit''s diagnoses' AS place WHERE EXISTS (
      SELECT 1 FROM encounter_diagnoses WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'a visit''s procedures' WHERE EXISTS (
      SELECT 1 FROM encounter_procedures WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'an invoice line' WHERE EXISTS (
      SELECT 1 FROM invoice_lines WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})
    UNION ALL
    SELECT 'an invoice line''s diagnoses' WHERE EXISTS (
      SELECT 1 FROM invoice_lines WHERE practice_id = ${practiceId}
        AND diagnoses @> jsonb_build_array(jsonb_build_object('system', ${system}::text, 'code', ${code}::text)))
    UNION ALL
    SELECT 'a saved price' WHERE EXISTS (
      SELECT 1 FROM practice_prices WHERE practice_id = ${practiceId} AND system = ${system} AND code = ${code})`.execute(
    trx,
  );
  return result.rows.map((r) => r.place);
}
