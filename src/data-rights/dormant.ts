// Owns the worker's de-identification of dormant patients: for each practice, the patients whose
// retention has ended (src/patients/retention.ts) and who have nothing open are de-identified, each in
// a transaction of that practice, a batch at a time. Safe to repeat and with several workers (a
// patient's row is held, and one already erased is passed over). Logs counts only.

import {
  addYears,
  erasureRefusals,
  MIN_RETENTION_YEARS,
  MINOR_KEPT_UNTIL_AGE,
} from '../patients/retention.ts';
import { patientRetentionRow, retentionCandidates } from '../patients/retention-reads.ts';
import { findPatient } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import type { Database } from '../platform/db/database.ts';
import { asOperator, inPractice } from '../platform/db/transaction.ts';
import { listPractices, type PracticeBilling, practiceBilling } from '../practices/service.ts';
import { deidentify, erasureFactsOf } from './erasure.ts';

const BATCH = 100;

/** The reason recorded on a patient de-identified by the worker. */
export const RETENTION_ENDED = 'retention ended';

/** De-identifies up to BATCH dormant patients across practices at `now`; answers how many. */
export async function eraseDormantPatients(db: Database, now: Date): Promise<number> {
  const practices = await asOperator(db, (trx) => listPractices(trx));
  let erased = 0;
  for (const practice of practices) {
    if (erased >= BATCH) break;
    erased += await eraseDormantOfPractice(db, practice.id, now, BATCH - erased);
  }
  return erased;
}

async function eraseDormantOfPractice(db: Database, practiceId: string, now: Date, limit: number) {
  const found = await inPractice(db, practiceId, async (trx) => {
    const billing = await practiceBilling(trx, practiceId);
    const today = dateIn(billing.timezone, now);
    // Candidates by the shortest retention anyone can have; the rule below judges each one.
    const activeBefore = new Date(
      `${addYears(today, -Math.max(billing.retentionYears, MIN_RETENTION_YEARS))}T00:00:00Z`,
    );
    const bornBy = addYears(today, -MINOR_KEPT_UNTIL_AGE);
    return { billing, ids: await retentionCandidates(trx, practiceId, activeBefore, bornBy, limit) };
  });
  let erased = 0;
  for (const id of found.ids) {
    if (await eraseIfDormant(db, found.billing, id, now)) erased++;
  }
  return erased;
}

/** One patient, judged again in the transaction that erases them: true when de-identified. */
function eraseIfDormant(
  db: Database,
  billing: PracticeBilling,
  patientId: string,
  now: Date,
): Promise<boolean> {
  return inPractice(db, billing.id, async (trx) => {
    if (!(await findPatient(trx, billing.id, patientId, true))) return false;
    const row = await patientRetentionRow(trx, billing.id, patientId);
    if (!row) return false;
    const refusals = erasureRefusals(erasureFactsOf(row, billing), dateIn(billing.timezone, now), null);
    if (refusals.length > 0) return false;
    await deidentify(trx, billing.id, patientId, { reason: RETENTION_ENDED, lawfulGround: null }, now);
    return true;
  });
}
