// Owns billing a visit, in three steps: gather what the bill needs (the visit locked with no live
// invoice, the coverage found for it, the patient, the rates of its procedures), decide what to make of
// it (bill-decision.ts: the invoice and its lines, issued or why not, its claim sent or why not), then
// write that once through the owners' stores: the invoice with its lines, inserted as the bill leaves
// it; the issue's announcement; the claim with its event (the claims capability's writes, handed in
// as a ClaimQueuer); the invoice's number at the commit; the claim's submission. The invoice exists
// whether or not issuing or claiming was done, and the answer says why something was skipped; it is
// built from the rows this transaction wrote, not read again.

import { readEncounter } from '../encounters/service.ts';
import { type CoverageRow, coverageFor, notPatientsCoverage, serviceDaysOf } from '../insurance/service.ts';
import { findPatient, type PatientRow } from '../patients/store.ts';
import { stampChange } from '../platform/db/change-feed.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import {
  type BillDecision,
  type BillFacts,
  billedProcedures,
  decideBill,
  serviceDatesOf,
} from './bill-decision.ts';
import { ratesForCodes } from './rates.ts';
import type { BillRequest, BillResult } from './schemas.ts';
import { announceIssued, invoiceOf } from './service.ts';
import { type InvoiceRecord, insertInvoice, liveInvoiceOfEncounter, numberInvoiceAtCommit } from './store.ts';

/**
 * The claims capability's writes of the claim a bill decided to send (src/claims/service.ts,
 * queueClaimFromBill; invoices may not import claims, so the composition root hands them over): the
 * claim under `coverage`, with its event, for the invoice this transaction inserted as the claim leaves
 * it. Answers how to queue the claim's submission, which the bill does once the invoice's number is
 * given (numberInvoiceAtCommit): its deferred write goes out behind the number's, and so takes the number.
 */
export type ClaimQueuer = (
  trx: Trx,
  billing: PracticeBilling,
  sent: { record: InvoiceRecord; coverage: CoverageRow },
  now: Date,
) => Promise<() => Promise<void>>;

export async function billEncounter(
  trx: Trx,
  billing: PracticeBilling,
  encounterId: string,
  request: BillRequest,
  now: Date,
  queueClaim: ClaimQueuer,
  /** Why the claim asked for is not to be queued now (the claims backlog), or null. */
  claimHeldBack: string | null = null,
): Promise<BillResult> {
  refuseClaimWithoutIssue(request);
  const facts = await gatherBill(trx, billing, encounterId, request, now);
  const decision = decideBill({ ...facts, claimHeldBack });
  const record = await writeBill(trx, billing, encounterId, decision, facts.patient, now, queueClaim);
  return { object: 'bill_result', invoice: invoiceOf(record), ...decision.outcome };
}

/** A claim is queued only for an invoice issued in the same call. */
function refuseClaimWithoutIssue(request: BillRequest): void {
  if (request.submitClaim === true && request.issue !== true) {
    throw fieldErrors([
      {
        field: 'submitClaim',
        code: 'invalid',
        message: 'submitClaim needs issue true: only an issued invoice can be claimed',
      },
    ]);
  }
}

/**
 * What a bill needs: the visit locked, the coverage whose plan prices it (the one asked for, which must
 * be the patient's, else the first active on the visit's dates of service), the patient, the rates of
 * the billed procedures' codes (one statement for every line), new ids and the change stamp.
 */
async function gatherBill(
  trx: Trx,
  billing: PracticeBilling,
  encounterId: string,
  request: BillRequest,
  now: Date,
): Promise<Omit<BillFacts, 'claimHeldBack'> & { patient: PatientRow }> {
  const visit = await lockUnbilledVisit(trx, billing, encounterId);
  const { patient_id: patientId, practitioner_id: practitionerId } = visit.encounter;
  const serviceDates = serviceDatesOf(billing.timezone, visit.encounter);
  const servicedOn = serviceDaysOf([serviceDates]);
  const coverage = await coverageFor(trx, billing.id, patientId, { asked: request.coverageId }, servicedOn);
  if (coverage.kind === 'not_patients') throw notPatientsCoverage();
  const patient = await findPatient(trx, billing.id, patientId);
  if (!patient) throw notFound('Patient');
  const billed = billedProcedures(visit);
  const rates = await ratesForCodes(
    trx,
    {
      practiceId: billing.id,
      currency: billing.currency,
      practitionerId,
      planId: coverage.kind === 'found' ? coverage.coverage.plan_id : null,
    },
    billed.flatMap((p) => (p.system === null ? [] : [{ system: p.system, code: p.code }])),
  );
  const ids = { invoice: newId('invoice'), lines: billed.map(() => newId('lineItem')) };
  return { billing, request, visit, patient, coverage, rates, ids, now, changedAt: await stampChange(trx) };
}

/**
 * The visit, locked, when no live invoice bills it yet. The visit's row is locked first: bills of one
 * visit queue here, and the second finds the first's invoice.
 */
async function lockUnbilledVisit(trx: Trx, billing: PracticeBilling, encounterId: string) {
  const visit = await readEncounter(trx, billing.id, encounterId, true);
  const existing = await liveInvoiceOfEncounter(trx, billing.id, encounterId);
  if (existing) {
    throw new AppError(
      'duplicate',
      `Encounter ${encounterId} is already billed on invoice ${existing.invoice_id}.`,
    );
  }
  return visit;
}

/**
 * Writes what the bill decided, each through its owner, and answers the invoice as written: the
 * invoice's number goes last but for the claim's submission, which takes it. The patient is the one
 * gathered, whose address the issue's announcement needs.
 */
async function writeBill(
  trx: Trx,
  billing: PracticeBilling,
  encounterId: string,
  decision: BillDecision,
  patient: Pick<PatientRow, 'contact_points'>,
  now: Date,
  queueClaim: ClaimQueuer,
): Promise<InvoiceRecord> {
  const record = await insertInvoice(trx, decision.invoice, encounterId, decision.lines);
  const { issued } = decision.outcome;
  if (issued) await announceIssued(trx, billing, record, patient, now);
  const queueSubmission = decision.claimUnder
    ? await queueClaim(trx, billing, { record, coverage: decision.claimUnder }, now)
    : undefined;
  await numberInvoiceAtCommit(trx, billing.id, record.invoice.id, billing.invoiceNumberPrefix, {
    number: record.invoice.number,
    notifiedAt: issued ? now : null,
  });
  await queueSubmission?.();
  return record;
}
