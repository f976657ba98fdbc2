// Owns what a bill makes of a visit, decided from plain values: the invoice and its lines (one per
// procedure that was done, priced from the first rate found, with the procedure's diagnoses or else
// the visit's, the first of them primary), whether it is issued or why not, and whether its claim is
// sent or why not, by the claim rule every claim shares (claimable.ts). bill.ts gathers the values, asks
// here, and writes what is decided: the invoice is inserted as the bill leaves it (issued, its claim
// submitting), not inserted and then changed.
import type { Insertable } from 'kysely';
import type { EncounterRecord } from '../encounters/store.ts';
import type { CoverageFound, CoverageRow } from '../insurance/service.ts';
import { dateIn } from '../platform/clock.ts';
import type { LineDiagnosis } from '../platform/db/column-types.ts';
import type { InvoiceLinesTable, InvoicesTable } from '../platform/db/tables.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { type ClaimableInvoice, claimVerdict } from './claimable.ts';
import { invoiceTotals, lineSubtotal, lineTotal } from './money.ts';
import { openStatus } from './payment-status.ts';
import { codeKey, type RateCandidate } from './rates.ts';
import type { BillRequest, BillResult } from './schemas.ts';
import { dueDateFrom, issueRefusal } from './service.ts';

const NOT_BILLED = ['not_done', 'entered_in_error'];

/** What the bill reads of the visit. */
interface Visit {
  encounter: Pick<EncounterRecord['encounter'], 'patient_id' | 'practitioner_id' | 'start_at' | 'end_at'>;
  diagnoses: Pick<EncounterRecord['diagnoses'][number], 'system' | 'code' | 'display'>[];
  procedures: Pick<
    EncounterRecord['procedures'][number],
    'id' | 'status' | 'system' | 'code' | 'display' | 'diagnosis_codes'
  >[];
}

/** What the bill gathered. */
export interface BillFacts {
  billing: PracticeBilling;
  request: BillRequest;
  visit: Visit;
  patient: { prefix: string | null; given_names: string[]; last_name: string | null };
  /** The coverage found for the visit: its plan prices the lines, and the claim is sent under it. */
  coverage: CoverageFound;
  /** Every rate of the billed procedures' codes, in the order billing tries them, by codeKey. */
  rates: ReadonlyMap<string, readonly RateCandidate[]>;
  /** Why the claim asked for is not to be sent now (the claims backlog), or null. */
  claimHeldBack: string | null;
  /** The new invoice's id, and one id for each billed procedure's line. */
  ids: { invoice: string; lines: readonly string[] };
  now: Date;
  /** The transaction's change stamp. */
  changedAt: Date;
}

/** What the bill writes and answers. */
export interface BillDecision {
  invoice: Insertable<InvoicesTable>;
  lines: Insertable<InvoiceLinesTable>[];
  /** The coverage the invoice's claim is sent under, or null when none is sent. */
  claimUnder: CoverageRow | null;
  outcome: Pick<BillResult, 'issued' | 'issueSkippedReason' | 'claimQueued' | 'claimSkippedReason'>;
}

export function decideBill(facts: BillFacts): BillDecision {
  const { billing, request, ids, now } = facts;
  const today = dateIn(billing.timezone, now);
  // The invoice's number is given with the COMMIT (numberInvoiceAtCommit); until then it carries a
  // provisional one made from its id, unique among the practice's numbers and never seen outside the
  // transaction. The reasons below name it so, and the request's answer (and its stored copy) has it
  // replaced by the number once the transaction has committed.
  const number = `#${ids.invoice}`;
  const lines = pricedLines(facts);
  const issueRefused = request.issue === true ? issueRefusal(number, lines) : null;
  const issued = request.issue === true && issueRefused === null;
  const totals = invoiceTotals(
    lines.map((line) => line.total),
    billing.vatRateBasisPoints,
  );
  const dueDate = dueDateFrom(today, billing);
  const status = issued
    ? openStatus({ totalGross: totals.totalGross, amountPaid: 0, dueDate }, today)
    : 'draft';
  const claim = request.submitClaim === true ? claimDecision(facts, { number, status, lines }, issued) : null;
  const claimUnder = claim?.send ? claim.coverage : null;
  return {
    invoice: {
      ...invoiceParties(facts),
      id: ids.invoice,
      number,
      status,
      issued_at: issued ? now : null,
      claim_status: claimUnder ? 'submitting' : null,
      coverage_id: claimUnder?.id ?? null,
      date: today,
      due_date: dueDate,
      total_net: totals.totalNet,
      total_gross: totals.totalGross,
      created_at: now,
      updated_at: facts.changedAt,
    },
    lines: lines.map(({ diagnoses, ...line }) => ({ ...line, diagnoses: JSON.stringify(diagnoses) })),
    claimUnder,
    outcome: {
      issued: request.issue === true ? issued : null,
      issueSkippedReason: issueRefused,
      claimQueued: claim ? claim.send : null,
      claimSkippedReason: claim && !claim.send ? claim.reason : null,
    },
  };
}

/** Who the invoice is from and to, and what it is priced and claimed under, as the visit and request say. */
function invoiceParties({ billing, request, visit, patient, coverage }: BillFacts) {
  return {
    practice_id: billing.id,
    patient_id: visit.encounter.patient_id,
    practitioner_id: visit.encounter.practitioner_id,
    pricing_coverage_id: coverage.kind === 'found' ? coverage.coverage.id : null,
    place_of_service_code: request.placeOfServiceCode ?? null,
    recipient_name: [patient.prefix, ...patient.given_names, patient.last_name].filter(Boolean).join(' '),
    currency: billing.currency,
  };
}

/**
 * The claim asked for: sent when the invoice was issued, claims are not held back, and the claim rule
 * lets it go under the coverage found; else why not.
 */
function claimDecision(
  { coverage, claimHeldBack }: BillFacts,
  invoice: ClaimableInvoice,
  issued: boolean,
): { send: true; coverage: CoverageRow } | { send: false; reason: string } {
  if (!issued) {
    return {
      send: false,
      reason: `Invoice ${invoice.number} was not issued (see issueSkippedReason); only an issued invoice can be claimed.`,
    };
  }
  if (claimHeldBack !== null) return { send: false, reason: claimHeldBack };
  const verdict = claimVerdict(invoice, coverage);
  return verdict.claimable
    ? { send: true, coverage: verdict.coverage }
    : { send: false, reason: verdict.reason };
}

/** The visit's procedures that are billed: every one but those not done or entered in error. */
export function billedProcedures(visit: Pick<Visit, 'procedures'>): Visit['procedures'] {
  return visit.procedures.filter((p) => !NOT_BILLED.includes(p.status));
}

/**
 * The dates of service of the visit's lines: its start's day in the practice's time zone, and its
 * end's when that is another day.
 */
export function serviceDatesOf(timezone: string, encounter: Pick<Visit['encounter'], 'start_at' | 'end_at'>) {
  const serviceDate = dateIn(timezone, encounter.start_at);
  const end = encounter.end_at ? dateIn(timezone, encounter.end_at) : null;
  return { service_date: serviceDate, service_date_end: end === serviceDate ? null : end };
}

/** One line per billed procedure, at the first rate found for its code (none: priced 0, unpriced). */
function pricedLines({ billing, visit, rates, ids }: BillFacts) {
  const serviceDates = serviceDatesOf(billing.timezone, visit.encounter);
  return billedProcedures(visit).map((procedure, index) => {
    const [rate] =
      procedure.system === null ? [] : (rates.get(codeKey(procedure.system, procedure.code)) ?? []);
    const unitPrice = rate?.amount ?? 0;
    const subtotal = lineSubtotal(1, unitPrice);
    return {
      practice_id: billing.id,
      id: ids.lines[index]!,
      invoice_id: ids.invoice,
      position: index + 1,
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
      diagnoses: lineDiagnoses(procedure, visit.diagnoses),
      procedure_id: procedure.id,
    };
  });
}

/** The diagnoses the procedure names (else the visit's), the first of them primary. */
function lineDiagnoses(
  procedure: Visit['procedures'][number],
  diagnoses: Visit['diagnoses'],
): LineDiagnosis[] {
  const named = procedure.diagnosis_codes
    .map((code) => diagnoses.find((d) => d.code === code))
    .filter((d): d is (typeof diagnoses)[number] => d !== undefined);
  return (named.length > 0 ? named : diagnoses).map((d, i) => ({
    system: d.system,
    code: d.code,
    display: d.display,
    primary: i === 0,
  }));
}
