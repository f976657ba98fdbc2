// Owns turning a visit into an invoice: one line per procedure that was done, priced from the first
// rate found (one statement for every line), with the procedure's diagnoses (or the visit's) and one
// primary; optionally issued and its claim queued in the same transaction. The invoice is inserted as
// it is issued, when it is, rather than inserted and then changed; the answer is built from the rows
// this transaction wrote, not read again. The invoice exists whether or not issuing or claiming was
// done; the result says why something was skipped.

import { readEncounter } from '../encounters/service.ts';
import {
  type CoverageRow,
  coverageOfPatient,
  firstActiveCoverage,
  notPatientsCoverage,
  serviceDaysOf,
} from '../insurance/service.ts';
import { findPatient, type PatientRow } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import { stampChange } from '../platform/db/change-feed.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { invoiceTotals, lineSubtotal, lineTotal } from './money.ts';
import { openStatus } from './payment-status.ts';
import { codeKey, ratesForCodes } from './rates.ts';
import type { BillRequest, BillResult } from './schemas.ts';
import { announceIssued, dueDateFrom, invoiceOf, issueRefusal } from './service.ts';
import {
  type InvoiceRecord,
  type InvoiceRow,
  insertInvoice,
  liveInvoiceOfEncounter,
  numberInvoiceAtCommit,
} from './store.ts';

const NOT_BILLED = ['not_done', 'entered_in_error'];

/**
 * Queues the claim of an invoice the caller's transaction created (so it holds the invoice's row and
 * the invoice has no claim yet, though its row may already say `submitting`), or says why it cannot be
 * sent; either way answers the invoice's row as it leaves it.
 */
export type ClaimQueuer = (
  trx: Trx,
  billing: PracticeBilling,
  created: InvoiceRecord,
  request: {
    coverageId: string | null;
    placeOfServiceCode: string | null;
    /** The coverage the bill found as a claim looks for one (null: none), so it is not looked up again. */
    coverage: CoverageRow | null;
  },
  now: Date,
) => Promise<
  | {
      queued: true;
      invoice: InvoiceRow;
      /**
       * Queues the claim's submission once the invoice's number is given (numberInvoiceAtCommit): its
       * deferred write goes out behind the number's, and so takes the number.
       */
      submit: () => Promise<void>;
    }
  | { queued: false; reason: string; invoice: InvoiceRow }
>;

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
  const gathered = await gatherBill(trx, billing, encounterId, request, now);
  const { visit, today, pricingCoverage, invoiceId, patient, lines } = gathered;
  // The invoice's number is given with the COMMIT (numberInvoiceAtCommit); until then it carries a
  // provisional one made from its id, unique among the practice's numbers and never seen outside this
  // transaction.
  const provisionalNumber = `#${invoiceId}`;
  // Issuing a new invoice is refused for want of lines or for lines no rate was found for; otherwise
  // it is inserted issued.
  const issueRefused = request.issue === true ? issueRefusal(provisionalNumber, lines) : null;
  const issued = request.issue === true && issueRefused === null;
  const created = await insertNewInvoice(trx, billing, visit, request, {
    invoiceId,
    provisionalNumber,
    pricingCoverageId: pricingCoverage?.id ?? null,
    claimCoverageId:
      issued && request.submitClaim === true && claimHeldBack === null
        ? claimCoverageOf(pricingCoverage, lines)
        : null,
    recipientName: [patient.prefix, ...patient.given_names, patient.last_name].filter(Boolean).join(' '),
    lines,
    issued,
    today,
    now,
  });
  const { outcome, record, submit } = await issueAndClaim(
    trx,
    billing,
    created,
    request,
    { issueRefused, coverage: pricingCoverage ?? null, claimHeldBack, patient },
    now,
    queueClaim,
  );
  await numberInvoiceAtCommit(trx, billing.id, invoiceId, billing.invoiceNumberPrefix, {
    number: provisionalNumber,
    notifiedAt: outcome.issued ? now : null,
  });
  await submit?.();
  // It names the invoice by its provisional number, which the request's answer (and its stored copy)
  // has replaced by the number once the transaction has committed.
  return {
    object: 'bill_result',
    invoice: invoiceOf(record),
    issued: outcome.issued,
    issueSkippedReason: outcome.issueSkippedReason,
    claimQueued: outcome.claimQueued,
    claimSkippedReason: outcome.claimSkippedReason,
  };
}

/** What a bill needs: the visit locked, the coverage that prices it, the patient, and its lines priced. */
async function gatherBill(
  trx: Trx,
  billing: PracticeBilling,
  encounterId: string,
  request: BillRequest,
  now: Date,
) {
  const visit = await lockUnbilledVisit(trx, billing, encounterId);
  const today = dateIn(billing.timezone, now);
  const pricingCoverage = await pricingCoverageOf(
    trx,
    billing,
    visit.encounter.patient_id,
    request,
    serviceDaysOf([serviceDatesOf(billing, visit)]),
  );
  const invoiceId = newId('invoice');
  const patient = await findPatient(trx, billing.id, visit.encounter.patient_id);
  if (!patient) throw notFound('Patient');
  const lines = await billedLines(trx, billing, invoiceId, visit, pricingCoverage?.plan_id ?? null);
  return { visit, today, pricingCoverage, invoiceId, patient, lines };
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

type Visit = Awaited<ReturnType<typeof readEncounter>>;

/**
 * The visit, locked, when no live invoice bills it yet. The visit's row is locked first: bills of one
 * visit queue here, and the second finds the first's invoice.
 */
async function lockUnbilledVisit(trx: Trx, billing: PracticeBilling, encounterId: string): Promise<Visit> {
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
 * The dates of service of the visit's lines: its start's day in the practice's time zone, and its
 * end's when that is another day.
 */
function serviceDatesOf(billing: PracticeBilling, { encounter }: Visit) {
  const serviceDate = dateIn(billing.timezone, encounter.start_at);
  const end = encounter.end_at ? dateIn(billing.timezone, encounter.end_at) : null;
  return { service_date: serviceDate, service_date_end: end === serviceDate ? null : end };
}

/**
 * The coverage whose plan prices the lines: the one asked for (the patient's), else the first one
 * active on the visit's dates of service (its first and last day).
 */
async function pricingCoverageOf(
  trx: Trx,
  billing: PracticeBilling,
  patientId: string,
  request: BillRequest,
  servicedOn: readonly string[],
): Promise<CoverageRow | undefined> {
  if (!request.coverageId) return firstActiveCoverage(trx, billing.id, patientId, servicedOn);
  const coverage = await coverageOfPatient(trx, billing.id, patientId, request.coverageId);
  if (!coverage) throw notPatientsCoverage();
  return coverage;
}

/**
 * One line per procedure that was done, priced from the first rate found, with the procedure's
 * diagnoses (or the visit's), the first of them primary.
 */
async function billedLines(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  visit: Visit,
  planId: string | null,
) {
  const { encounter, diagnoses, procedures } = visit;
  const serviceDates = serviceDatesOf(billing, visit);
  const pricing = {
    practiceId: billing.id,
    currency: billing.currency,
    practitionerId: encounter.practitioner_id,
    planId,
  };
  const billed = procedures.filter((p) => !NOT_BILLED.includes(p.status));
  // One statement prices every line.
  const rates = await ratesForCodes(
    trx,
    pricing,
    billed.flatMap((p) => (p.system === null ? [] : [{ system: p.system, code: p.code }])),
  );
  return billed.map((procedure, index) => {
    const [rate] =
      procedure.system === null ? [] : (rates.get(codeKey(procedure.system, procedure.code)) ?? []);
    return billedLine(billing.id, invoiceId, index + 1, serviceDates, procedure, diagnoses, rate);
  });
}

/** One procedure's line at its rate (none: priced 0), with the diagnoses it names (else the visit's). */
function billedLine(
  practiceId: string,
  invoiceId: string,
  position: number,
  serviceDates: ReturnType<typeof serviceDatesOf>,
  procedure: Visit['procedures'][number],
  diagnoses: Visit['diagnoses'],
  rate: { amount: number; pricingSource: string } | undefined,
) {
  const unitPrice = rate?.amount ?? 0;
  const subtotal = lineSubtotal(1, unitPrice);
  const named = procedure.diagnosis_codes
    .map((code) => diagnoses.find((d) => d.code === code))
    .filter((d): d is (typeof diagnoses)[number] => d !== undefined);
  const lineDiagnoses = named.length > 0 ? named : diagnoses;
  return {
    practice_id: practiceId,
    id: newId('lineItem'),
    invoice_id: invoiceId,
    position,
    ...serviceDates,
    system: procedure.system,
    code: procedure.code,
    description: procedure.display,
    modifiers: [],
    quantity: 1,
    unit_price: unitPrice,
    subtotal,
    total: lineTotal(subtotal, []),
    pricing_source: rate?.pricingSource ?? null,
    // No rate: priced 0 until someone sets the price; the invoice cannot be issued before.
    unpriced: rate === undefined,
    diagnoses: JSON.stringify(
      lineDiagnoses.map((d, i) => ({
        system: d.system,
        code: d.code,
        display: d.display,
        primary: i === 0,
      })),
    ),
    procedure_id: procedure.id,
  };
}

type BilledLine = Awaited<ReturnType<typeof billedLines>>[number];

/**
 * The coverage a claim of the new invoice will be sent under, when it looks sendable: the bill found
 * one, and every line has a primary diagnosis. The invoice is inserted as that claim leaves it (claim
 * status `submitting`), so the row is not written again; the claim's own rules still decide, and a
 * claim they refuse sets the row back (src/claims/service.ts, queueClaimFromBill).
 */
function claimCoverageOf(coverage: CoverageRow | undefined, lines: readonly BilledLine[]): string | null {
  if (!coverage) return null;
  const everyLineHasPrimary = lines.every((line) =>
    (JSON.parse(line.diagnoses) as { primary: boolean }[]).some((d) => d.primary),
  );
  return everyLineHasPrimary ? coverage.id : null;
}

/**
 * The invoice of the visit with its lines, addressed to the patient, due after the payment terms: a
 * draft, or `issued` (its status then following from its money, as issuing sets it); with its claim
 * `submitting` under `claimCoverageId` when one is to be sent in the same transaction.
 */
async function insertNewInvoice(
  trx: Trx,
  billing: PracticeBilling,
  { encounter }: Visit,
  request: BillRequest,
  draft: {
    invoiceId: string;
    provisionalNumber: string;
    pricingCoverageId: string | null;
    claimCoverageId: string | null;
    recipientName: string;
    lines: BilledLine[];
    issued: boolean;
    today: string;
    now: Date;
  },
): Promise<InvoiceRecord> {
  const changedAt = await stampChange(trx);
  const totals = invoiceTotals(
    draft.lines.map((line) => line.total),
    billing.vatRateBasisPoints,
  );
  const dueDate = dueDateFrom(draft.today, billing);
  return insertInvoice(
    trx,
    {
      practice_id: billing.id,
      id: draft.invoiceId,
      number: draft.provisionalNumber,
      status: draft.issued
        ? openStatus({ totalGross: totals.totalGross, amountPaid: 0, dueDate }, draft.today)
        : 'draft',
      issued_at: draft.issued ? draft.now : null,
      claim_status: draft.claimCoverageId === null ? null : 'submitting',
      patient_id: encounter.patient_id,
      practitioner_id: encounter.practitioner_id,
      coverage_id: draft.claimCoverageId,
      pricing_coverage_id: draft.pricingCoverageId,
      place_of_service_code: request.placeOfServiceCode ?? null,
      recipient_name: draft.recipientName,
      date: draft.today,
      due_date: dueDate,
      currency: billing.currency,
      total_net: totals.totalNet,
      total_gross: totals.totalGross,
      created_at: draft.now,
      updated_at: changedAt,
    },
    encounter.id,
    draft.lines,
  );
}

interface IssueAndClaimOutcome {
  issued: boolean | null;
  issueSkippedReason: string | null;
  claimQueued: boolean | null;
  claimSkippedReason: string | null;
}

/**
 * Tells of the invoice's issue (inserted issued unless `issueRefused`) and queues its claim when asked.
 * The invoice is created whatever happens to issuing or claiming: a refusal is reported, not thrown.
 * Answers the invoice as this transaction leaves it.
 */
async function issueAndClaim(
  trx: Trx,
  billing: PracticeBilling,
  created: InvoiceRecord,
  request: BillRequest,
  known: {
    issueRefused: string | null;
    coverage: CoverageRow | null;
    claimHeldBack: string | null;
    patient: Pick<PatientRow, 'contact_points'>;
  },
  now: Date,
  queueClaim: ClaimQueuer,
): Promise<{
  outcome: IssueAndClaimOutcome;
  record: InvoiceRecord;
  submit: (() => Promise<void>) | undefined;
}> {
  const outcome: IssueAndClaimOutcome = {
    issued: null,
    issueSkippedReason: null,
    claimQueued: null,
    claimSkippedReason: null,
  };
  // The invoice as this transaction holds it: issuing and claiming go on from it without reading it again.
  let current = created;
  let submit: (() => Promise<void>) | undefined;
  if (request.issue === true) {
    outcome.issued = known.issueRefused === null;
    outcome.issueSkippedReason = known.issueRefused;
    if (outcome.issued) await announceIssued(trx, billing, current, known.patient, now);
  }
  if (request.submitClaim === true && !outcome.issued) {
    outcome.claimQueued = false;
    outcome.claimSkippedReason = `Invoice ${current.invoice.number} was not issued (see issueSkippedReason); only an issued invoice can be claimed.`;
  } else if (request.submitClaim === true && known.claimHeldBack !== null) {
    outcome.claimQueued = false;
    outcome.claimSkippedReason = known.claimHeldBack;
  } else if (request.submitClaim === true) {
    const queued = await queueClaim(
      trx,
      billing,
      current,
      {
        coverageId: request.coverageId ?? null,
        placeOfServiceCode: request.placeOfServiceCode ?? null,
        coverage: known.coverage,
      },
      now,
    );
    outcome.claimQueued = queued.queued;
    outcome.claimSkippedReason = queued.queued ? null : queued.reason;
    current = { ...current, invoice: queued.invoice };
    if (queued.queued) submit = queued.submit;
  }
  return { outcome, record: current, submit };
}
