// Owns turning a visit into an invoice: one line per procedure that was done, priced from the first
// rate found, with the procedure's diagnoses (or the visit's) and one primary; optionally issued and
// its claim queued in the same transaction. The invoice exists whether or not issuing or claiming
// was done; the result says why something was skipped.

import { readEncounter } from '../encounters/service.ts';
import {
  type CoverageRow,
  coverageOfPatient,
  firstActiveCoverage,
  notPatientsCoverage,
} from '../insurance/service.ts';

import { findPatient } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import { stampChange } from '../platform/db/change-feed.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { invoiceTotals, lineSubtotal, lineTotal } from './money.ts';
import { ratesFor } from './rates.ts';
import type { BillRequest, BillResult } from './schemas.ts';
import { invoiceOf, issueInvoice, readInvoice } from './service.ts';
import { assignInvoiceNumber, type InvoiceRecord, insertInvoice, liveInvoiceOfEncounter } from './store.ts';

const NOT_BILLED = ['not_done', 'entered_in_error'];

/**
 * Queues the claim of an invoice the caller's transaction created (so it holds the invoice's row and
 * the invoice has no claim yet), or says why it cannot be sent.
 */
export type ClaimQueuer = (
  trx: Trx,
  billing: PracticeBilling,
  created: InvoiceRecord,
  request: { coverageId: string | null; placeOfServiceCode: string | null },
  now: Date,
) => Promise<{ queued: true } | { queued: false; reason: string }>;

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

export async function billEncounter(
  trx: Trx,
  billing: PracticeBilling,
  encounterId: string,
  request: BillRequest,
  now: Date,
  queueClaim: ClaimQueuer,
): Promise<BillResult> {
  if (request.submitClaim === true && request.issue !== true) {
    throw fieldErrors([
      {
        field: 'submitClaim',
        code: 'invalid',
        message: 'submitClaim needs issue true: only an issued invoice can be claimed',
      },
    ]);
  }
  // The visit's row is locked first: bills of one visit queue here, and the second finds the first's invoice.
  const { encounter, diagnoses, procedures } = await readEncounter(trx, billing.id, encounterId, true);
  const existing = await liveInvoiceOfEncounter(trx, billing.id, encounterId);
  if (existing) {
    throw new AppError(
      'duplicate',
      `Encounter ${encounterId} is already billed on invoice ${existing.invoice_id}.`,
    );
  }
  const today = dateIn(billing.timezone, now);

  let pricingCoverage: CoverageRow | undefined;
  if (request.coverageId) {
    pricingCoverage = await coverageOfPatient(trx, billing.id, encounter.patient_id, request.coverageId);
    if (!pricingCoverage) throw notPatientsCoverage();
  } else {
    pricingCoverage = await firstActiveCoverage(trx, billing.id, encounter.patient_id, today);
  }

  const invoiceId = newId('invoice');
  const patient = await findPatient(trx, billing.id, encounter.patient_id);
  if (!patient) throw notFound('Patient');

  const serviceDate = dateIn(billing.timezone, encounter.start_at);
  const serviceDateEnd = encounter.end_at ? dateIn(billing.timezone, encounter.end_at) : null;
  const pricing = {
    practiceId: billing.id,
    currency: billing.currency,
    practitionerId: encounter.practitioner_id,
    planId: pricingCoverage?.plan_id ?? null,
  };
  const billed = procedures.filter((p) => !NOT_BILLED.includes(p.status));
  const lines = [];
  for (const [index, procedure] of billed.entries()) {
    const [rate] = await ratesFor(trx, pricing, procedure.system, procedure.code);
    const unitPrice = rate?.amount ?? 0;
    const subtotal = lineSubtotal(1, unitPrice);
    const named = procedure.diagnosis_codes
      .map((code) => diagnoses.find((d) => d.code === code))
      .filter((d): d is (typeof diagnoses)[number] => d !== undefined);
    const lineDiagnoses = named.length > 0 ? named : diagnoses;
    lines.push({
      practice_id: billing.id,
      id: newId('lineItem'),
      invoice_id: invoiceId,
      position: index + 1,
      service_date: serviceDate,
      service_date_end: serviceDateEnd === serviceDate ? null : serviceDateEnd,
      system: procedure.system,
      code: procedure.code,
      description: procedure.display,
      modifiers: [],
      quantity: 1,
      unit_price: unitPrice,
      subtotal,
      total: lineTotal(subtotal, []),
      pricing_source: rate?.pricingSource ?? null,
      diagnoses: JSON.stringify(
        lineDiagnoses.map((d, i) => ({
          system: d.system,
          code: d.code,
          display: d.display,
          primary: i === 0,
        })),
      ),
      procedure_id: procedure.id,
    });
  }
  // The invoice's number is given last (assignInvoiceNumber); until then it carries a provisional one
  // made from its id, unique among the practice's numbers and never seen outside this transaction.
  const provisionalNumber = `#${invoiceId}`;
  const changedAt = await stampChange(trx);
  const totals = invoiceTotals(
    lines.map((line) => line.total),
    billing.vatRateBasisPoints,
  );
  const created = await insertInvoice(
    trx,
    {
      practice_id: billing.id,
      id: invoiceId,
      number: provisionalNumber,
      status: 'draft',
      claim_status: null,
      patient_id: encounter.patient_id,
      practitioner_id: encounter.practitioner_id,
      coverage_id: null,
      pricing_coverage_id: pricingCoverage?.id ?? null,
      place_of_service_code: request.placeOfServiceCode ?? null,
      recipient_name: [patient.prefix, ...patient.given_names, patient.last_name].filter(Boolean).join(' '),
      date: today,
      due_date: addDays(today, billing.paymentTermsDays),
      currency: billing.currency,
      total_net: totals.totalNet,
      total_gross: totals.totalGross,
      created_at: now,
      updated_at: changedAt,
    },
    encounterId,
    lines,
  );

  let issued: boolean | null = null;
  let issueSkippedReason: string | null = null;
  let claimQueued: boolean | null = null;
  let claimSkippedReason: string | null = null;
  // The invoice as this transaction holds it: issuing and claiming go on from it without reading it again.
  let current = created;
  if (request.issue === true) {
    // The invoice is created whatever happens to issuing; a refusal is reported, not thrown.
    try {
      current = await issueInvoice(trx, billing, invoiceId, now, created);
      issued = true;
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'business_rule')) throw error;
      issued = false;
      issueSkippedReason = error.detail;
    }
  }
  if (request.submitClaim === true) {
    const outcome = await queueClaim(
      trx,
      billing,
      current,
      { coverageId: request.coverageId ?? null, placeOfServiceCode: request.placeOfServiceCode ?? null },
      now,
    );
    claimQueued = outcome.queued;
    claimSkippedReason = outcome.queued ? null : outcome.reason;
  }
  const record = await readInvoice(trx, billing.id, invoiceId);
  const number = await assignInvoiceNumber(trx, billing.id, invoiceId, billing.invoiceNumberPrefix, {
    number: provisionalNumber,
    notifiedAt: issued ? now : null,
  });
  record.invoice.number = number;
  return {
    object: 'bill_result',
    invoice: invoiceOf(record),
    issued,
    issueSkippedReason: issueSkippedReason?.replaceAll(provisionalNumber, number) ?? null,
    claimQueued,
    claimSkippedReason: claimSkippedReason?.replaceAll(provisionalNumber, number) ?? null,
  };
}
