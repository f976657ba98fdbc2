// Owns a patient's de-identification (POPIA s14(4), s24(1)(b)): on request (POST .../erase) or by the
// worker once retention has ended (retention.ts decides, retention-reads.ts gathers). It removes the
// person from the record: the patient's personal fields, the visits' diagnoses and procedures, the
// coverages' member numbers, the invoices' recipient names and line diagnoses, stored answers naming
// them and the payloads of their finished claim jobs; the financial rows stay for the books. It
// reports the change as `patient.erased` (naming the patient's id only) and stamps the invoices for
// the updatedSince feed. Never logs anything about the patient but the id.
import { removePatientClinicalCodes } from '../encounters/store.ts';
import { forgetAnswersNaming } from '../idempotency/idempotency-store.ts';
import { clearPatientMemberNumbers } from '../insurance/store.ts';
import { unlinkInvoicesFromPerson } from '../invoices/store.ts';
import { forgetFinishedClaimPayloads } from '../jobs/queue.ts';
import {
  type ErasureFacts,
  type ErasureRefusal,
  erasureRefusals,
  retentionEndsOn,
} from '../patients/retention.ts';
import {
  type PatientRetentionRow,
  patientClaimIds,
  patientRetentionRow,
} from '../patients/retention-reads.ts';
import { erasePatientRow, findPatient, type PatientRow } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import { stampChange } from '../platform/db/change-feed.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, notFound } from '../platform/http/errors.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';

export interface Erasure {
  reason: string;
  /** The practice's ground for ending retention early (POPIA s14(1), s24(1)); recorded with the erasure. */
  lawfulGround: string | null;
}

/** The retention facts of a gathered row, each instant as a day in the practice's time zone. */
export function erasureFactsOf(row: PatientRetentionRow, billing: PracticeBilling): ErasureFacts {
  return {
    erased: row.erased,
    birthDate: row.birth_date,
    lastActivityOn: dateIn(billing.timezone, row.last_activity_at),
    retentionYears: billing.retentionYears,
    openInvoices: row.open_invoices,
    claimsInFlight: row.claims_in_flight,
  };
}

function refusalDetail(refusals: ErasureRefusal[], facts: ErasureFacts): string {
  const why: Record<ErasureRefusal, string> = {
    already_erased: 'the patient is erased already (already_erased)',
    open_invoice: `${facts.openInvoices} invoice(s) of the patient are not closed (open_invoice)`,
    claim_in_flight: `${facts.claimsInFlight} claim(s) await the insurer's answer (claim_in_flight)`,
    retention_required: `the records are inside the retention the law requires until ${retentionEndsOn(facts)}; send lawfulGround to end it early (retention_required)`,
  };
  return `The patient cannot be erased: ${refusals.map((r) => why[r]).join('; ')}.`;
}

/** Gathers, decides and de-identifies one patient on request; 404 unknown, 422 naming every refusal. */
export async function erasePatient(
  trx: Trx,
  billing: PracticeBilling,
  patientId: string,
  erasure: Erasure,
  now: Date,
): Promise<PatientRow> {
  // The patient's row is held first, so two erasures of one patient are one after the other.
  if (!(await findPatient(trx, billing.id, patientId, true))) throw notFound('Patient');
  const row = await patientRetentionRow(trx, billing.id, patientId);
  if (!row) throw notFound('Patient');
  const facts = erasureFactsOf(row, billing);
  const refusals = erasureRefusals(facts, dateIn(billing.timezone, now), erasure.lawfulGround);
  if (refusals.length > 0) throw new AppError('business_rule', refusalDetail(refusals, facts));
  return deidentify(trx, billing.id, patientId, erasure, now);
}

/** The writes of a de-identification, each by its table's owner; the patient's row is held. */
export async function deidentify(
  trx: Trx,
  practiceId: string,
  patientId: string,
  erasure: Erasure,
  now: Date,
): Promise<PatientRow> {
  const erased = await erasePatientRow(trx, practiceId, patientId, erasure, now);
  if (!erased) throw notFound('Patient');
  await removePatientClinicalCodes(trx, practiceId, patientId);
  await clearPatientMemberNumbers(trx, practiceId, patientId, now);
  await unlinkInvoicesFromPerson(trx, practiceId, patientId, await stampChange(trx));
  await forgetAnswersNaming(trx, practiceId, patientId);
  await forgetFinishedClaimPayloads(trx, practiceId, await patientClaimIds(trx, practiceId, patientId));
  await recordEvent(trx, practiceId, 'patient.erased', { type: 'patient', id: patientId }, now);
  return erased;
}
