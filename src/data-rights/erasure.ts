// Owns a patient's de-identification (POPIA s14(4), s24(1)(b)): on request (POST .../erase) or by the
// worker once retention has ended (retention.ts decides, retention-reads.ts gathers). It removes the
// person from the record: the patient's personal fields, the visits' diagnoses and procedures, the
// coverages' member numbers, the invoices' recipient names and line diagnoses, stored answers naming
// them, the payloads of their finished claim jobs, and the mail to them (the outbox's copies, the mail
// server's answers); the financial rows stay for the books. It reports the change as `patient.erased`
// (naming the patient's id only) and stamps the invoices for the updatedSince feed. Never logs
// anything about the patient but the id.
import { removePatientClinicalCodes } from '../encounters/store.ts';
import { forgetAnswersNaming } from '../idempotency/idempotency-store.ts';
import { clearPatientMemberNumbers } from '../insurance/store.ts';
import { unlinkInvoicesFromPerson } from '../invoices/store.ts';
import { forgetFinishedClaimPayloads } from '../jobs/queue.ts';
import { forgetPatientMail } from '../notifications/store.ts';
import {
  type ErasureFacts,
  type ErasureRefusal,
  erasureRefusals,
  isDormant,
  retentionEndsOn,
} from '../patients/retention.ts';
import {
  type PatientRetentionRow,
  patientClaimIds,
  patientInvoiceIds,
  patientRetentionRow,
} from '../patients/retention-reads.ts';
import { erasePatientRow, findPatient, type PatientRow, setRetainedForLife } from '../patients/store.ts';
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
    lifelong: row.retained_for_life,
    openInvoices: row.open_invoices,
    claimsInFlight: row.claims_in_flight,
  };
}

function until(facts: ErasureFacts): string {
  const ends = retentionEndsOn(facts);
  return ends === null ? "for the patient's lifetime" : `until ${ends}`;
}

function refusalDetail(refusals: ErasureRefusal[], facts: ErasureFacts): string {
  const why: Record<ErasureRefusal, string> = {
    already_erased: 'the patient is erased already (already_erased)',
    open_invoice: `${facts.openInvoices} invoice(s) of the patient are not closed (open_invoice)`,
    claim_in_flight: `${facts.claimsInFlight} claim(s) await the insurer's answer (claim_in_flight)`,
    retention_required: `the records are inside the retention the law requires ${until(facts)}; send lawfulGround to end it early (retention_required)`,
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
  await forgetPatientMail(trx, practiceId, await patientInvoiceIds(trx, practiceId, patientId));
  await recordEvent(trx, practiceId, 'patient.erased', { type: 'patient', id: patientId }, now);
  return erased;
}

export interface PatientRetention {
  object: 'patient_retention';
  patientId: string;
  /** Kept for the patient's lifetime (HPCSA Booklet 9 s9.3.2). */
  lifelong: boolean;
  lastActivityOn: string;
  /** The first day the records are no longer required; null when kept for life or erased. */
  retentionEndsOn: string | null;
  dormant: boolean;
  erased: boolean;
}

/** Where the patient's retention stands today, in the practice's days. */
export async function patientRetention(
  trx: Trx,
  billing: PracticeBilling,
  patientId: string,
  now: Date,
): Promise<PatientRetention> {
  const row = await patientRetentionRow(trx, billing.id, patientId);
  if (!row) throw notFound('Patient');
  const facts = erasureFactsOf(row, billing);
  return {
    object: 'patient_retention',
    patientId,
    lifelong: row.retained_for_life,
    lastActivityOn: facts.lastActivityOn,
    retentionEndsOn: row.erased ? null : retentionEndsOn(facts),
    dormant: !row.erased && isDormant(facts, dateIn(billing.timezone, now)),
    erased: row.erased,
  };
}

/** Marks (or unmarks) the patient's records as kept for their lifetime; an erased patient is refused. */
export async function setLifelongRetention(
  trx: Trx,
  billing: PracticeBilling,
  patientId: string,
  lifelong: boolean,
  now: Date,
): Promise<PatientRetention> {
  const row = await findPatient(trx, billing.id, patientId, true);
  if (!row) throw notFound('Patient');
  if (row.erased_at)
    throw new AppError('business_rule', 'The patient is erased: there is nothing left to keep.');
  await setRetainedForLife(trx, billing.id, patientId, lifelong, now);
  return patientRetention(trx, billing, patientId, now);
}
