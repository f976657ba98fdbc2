// Owns the claim lifecycle on our side. A claim is sent (submitting), the insurer's answer makes it
// accepted, partially_accepted or rejected; a reversal goes reversing → reversed or reversal_failed;
// a resubmission of a rejected or reversed claim is sent again from the invoice's current lines, and
// one of a partially accepted claim is reversed first, then sent by itself. Sending and resubmitting
// gather what they need (the invoice locked, its claim, the coverage), ask the pure rules of
// sending.ts, then write; one rule (`decideResubmission`) decides both whether resubmit is accepted and
// what the claim's `resubmittable` says. Every status change updates the invoice's claimStatus and
// writes claim.status_changed in the same transaction; the insurer is called only by background jobs
// enqueued in that transaction.
import type { Insertable } from 'kysely';
import type { Static } from 'typebox';
import { type CoverageFound, type CoverageRow, coverageFor, serviceDaysOf } from '../insurance/service.ts';
import type { ClaimQueuer } from '../invoices/bill.ts';
import type { ClaimableInvoice } from '../invoices/claimable.ts';
import { readInvoice, touchInvoice } from '../invoices/service.ts';
import type { InvoiceRecord, InvoiceRow } from '../invoices/store.ts';
import { enqueueJob } from '../jobs/queue.ts';
import type { ClaimsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { CLAIM_JOBS } from './job-kinds.ts';
import type { Claim, ClaimRequest, ClaimStatus } from './schemas.ts';
import { decideResubmission, decideSend, RESUBMITTABLE, REVERSIBLE } from './sending.ts';
import {
  type ClaimItemRow,
  type ClaimRow,
  claimItems,
  findClaimOfInvoice,
  insertClaim,
  replaceClaimItems,
  updateClaim,
} from './store.ts';
import { submissionOf } from './submission.ts';

export { claimItems } from './store.ts';

const OUTCOME_OF: Record<ClaimStatus, Claim['outcome']> = {
  submitting: 'queued',
  reversing: 'queued',
  accepted: 'complete',
  reversed: 'complete',
  partially_accepted: 'partial',
  rejected: 'error',
  reversal_failed: 'error',
};

/**
 * The claim as the API shows it. `resubmittable` is true exactly when a resubmission without a body
 * would be accepted: the claim is in a status resubmit takes and `invoiceClaimable` (the claim rule,
 * `decideResubmission`, under the claim's coverage) lets it go.
 */
export function claimOf(row: ClaimRow, items: ClaimItemRow[], invoiceClaimable: boolean): Claim {
  const status = row.status as ClaimStatus;
  return {
    object: 'claim',
    id: row.id,
    invoiceId: row.invoice_id,
    status,
    outcome: OUTCOME_OF[status],
    message: row.message,
    resubmittable: RESUBMITTABLE.includes(status) && invoiceClaimable,
    reversible: REVERSIBLE.includes(status),
    reversalReason: row.reversal_reason,
    authorizationReference: row.authorization_reference,
    submittedAt: row.submitted_at?.toISOString() ?? null,
    currency: row.currency,
    items: items.map((i) => ({
      lineNumber: i.line_number,
      lineItemId: i.line_item_id,
      decision: i.decision,
      submitted: i.submitted === null ? null : Number(i.submitted),
      benefit: i.benefit === null ? null : Number(i.benefit),
      rejections: i.rejections,
      warnings: i.warnings,
    })),
  };
}

export async function readClaim(trx: Trx, billing: PracticeBilling, invoiceId: string): Promise<Claim> {
  const record = await readInvoice(trx, billing.id, invoiceId);
  const claim = await findClaimOfInvoice(trx, billing.id, invoiceId);
  if (!claim) throw notFound('Claim');
  // Only a claim resubmit takes needs its coverage found: no other is resubmittable, whatever it is.
  const coverage = RESUBMITTABLE.includes(claim.status)
    ? await coverageOfClaim(trx, billing, record, claim, {})
    : undefined;
  const resubmittable =
    coverage !== undefined && decideResubmission({ invoice: claimableOf(record), claim, coverage }).claimable;
  return claimOf(claim, await claimItems(trx, billing.id, claim.id), resubmittable);
}

/** Changes a claim's status with its event and the invoice's claimStatus, in the caller's transaction. */
export async function setClaimStatus(
  trx: Trx,
  billing: PracticeBilling,
  claim: ClaimRow,
  status: ClaimStatus,
  fields: Partial<
    Pick<
      ClaimRow,
      | 'message'
      | 'authorization_reference'
      | 'submission_id'
      | 'submission_started_at'
      | 'submitted_at'
      | 'resubmit_after_reversal'
      | 'coverage_id'
      | 'place_of_service_code'
      | 'reversal_reason'
    >
  >,
  now: Date,
): Promise<ClaimRow> {
  const updated = await updateClaim(trx, billing.id, claim.id, { ...fields, status, updated_at: now });
  // A new submission has no decisions yet: the earlier answer's items must not be read as its own.
  if (status === 'submitting') await replaceClaimItems(trx, billing.id, claim.id, []);
  await touchInvoice(trx, billing, claim.invoice_id, {
    claim_status: status,
    coverage_id: updated.coverage_id,
  });
  if (status !== claim.status) {
    await recordEvent(
      trx,
      billing.id,
      'claim.status_changed',
      { type: 'invoice', id: claim.invoice_id },
      now,
      { claim: { id: updated.id, status } },
    );
  }
  return updated;
}

/** The invoice's lock, its claim's (when it has one) and the coverage the claim would go under. */
async function gatherClaim(trx: Trx, billing: PracticeBilling, invoiceId: string, request: ClaimRequest) {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  const claim = await findClaimOfInvoice(trx, billing.id, invoiceId, true);
  const coverage = await coverageOfClaim(trx, billing, record, claim, request);
  return { record, claim, coverage };
}

/**
 * The coverage a claim of the invoice goes under: the one the request names, else the claim's last,
 * else the patient's first active on the invoice's dates of service.
 */
async function coverageOfClaim(
  trx: Trx,
  billing: PracticeBilling,
  record: InvoiceRecord,
  claim: ClaimRow | undefined,
  request: ClaimRequest,
): Promise<CoverageFound> {
  return coverageFor(
    trx,
    billing.id,
    record.invoice.patient_id,
    { asked: request.coverageId, kept: claim?.coverage_id },
    serviceDaysOf(record.lines),
  );
}

/** What the claim rule reads of an invoice. */
function claimableOf({ invoice, lines }: InvoiceRecord): ClaimableInvoice {
  return { number: invoice.number, status: invoice.status, lines };
}

/** A claim action's refusal: 422 naming the request's field to blame, else business_rule. */
function refusalOf(refused: { reason: string; field: 'coverageId' | null }): AppError {
  return refused.field
    ? fieldErrors([{ field: refused.field, code: 'invalid', message: refused.reason }])
    : new AppError('business_rule', refused.reason);
}

/**
 * Queues the claim's submission job; with the invoice and coverage it is sent for (held by this
 * transaction), the job carries the submission built from them (src/claims/submission.ts).
 */
async function queueSubmission(
  trx: Trx,
  billing: PracticeBilling,
  claim: ClaimRow,
  now: Date,
  sentFor?: { record: InvoiceRecord; coverage: CoverageRow },
): Promise<void> {
  await enqueueJob(
    trx,
    billing.id,
    CLAIM_JOBS.submit,
    {
      claimId: claim.id,
      submissionId: claim.submission_id,
      ...(sentFor
        ? {
            prepared: {
              invoiceId: claim.invoice_id,
              startedAt: claim.submission_started_at.toISOString(),
              submission: submissionOf(claim, sentFor.record, sentFor.coverage),
              billing,
            },
          }
        : {}),
    },
    now,
  );
}

/** Sends the invoice's first claim. Throws the refusal (`refusalOf`) when it cannot. */
export async function sendClaim(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: ClaimRequest,
  now: Date,
): Promise<ClaimRow> {
  const { record, claim: existing, coverage } = await gatherClaim(trx, billing, invoiceId, request);
  const verdict = decideSend({ invoice: claimableOf(record), claim: existing, coverage });
  if (!verdict.claimable) throw refusalOf(verdict);
  const placeOfServiceCode = request.placeOfServiceCode ?? record.invoice.place_of_service_code;
  const claim = await insertSentClaim(
    trx,
    billing,
    newClaimRow(record.invoice, verdict.coverage, placeOfServiceCode, now),
    now,
  );
  await touchInvoice(trx, billing, invoiceId, { claim_status: 'submitting', coverage_id: claim.coverage_id });
  await queueSubmission(trx, billing, claim, now, { record, coverage: verdict.coverage });
  return claim;
}

/**
 * Bill's submitClaim, once the bill has decided to send it (src/invoices/bill.ts, ClaimQueuer): the
 * claim with its event, the invoice inserted already as the claim leaves it. Answers the queueing of the
 * submission, which the bill does once the invoice's number is given (numberInvoiceAtCommit): the
 * job's deferred write goes out behind the number's, and so takes the number.
 */
export const queueClaimFromBill: ClaimQueuer = async (trx, billing, { record, coverage }, now) => {
  const row = newClaimRow(record.invoice, coverage, record.invoice.place_of_service_code, now);
  const claim = await insertSentClaim(trx, billing, row, now);
  return () => queueSubmission(trx, billing, claim, now, { record, coverage });
};

/** A new claim of the invoice: submitting under the coverage, with a fresh submission. */
function newClaimRow(
  invoice: InvoiceRow,
  coverage: CoverageRow,
  placeOfServiceCode: string | null,
  now: Date,
): Insertable<ClaimsTable> {
  return {
    practice_id: invoice.practice_id,
    id: newId('claim'),
    invoice_id: invoice.id,
    status: 'submitting',
    message: null,
    authorization_reference: null,
    submitted_at: now,
    currency: invoice.currency,
    coverage_id: coverage.id,
    place_of_service_code: placeOfServiceCode,
    submission_id: newId('submission'),
    submission_started_at: now,
    created_at: now,
    updated_at: now,
  };
}

/** Inserts a new claim with its claim.status_changed event. */
async function insertSentClaim(
  trx: Trx,
  billing: PracticeBilling,
  row: Insertable<ClaimsTable>,
  now: Date,
): Promise<ClaimRow> {
  const claim = await insertClaim(trx, row);
  await recordEvent(trx, billing.id, 'claim.status_changed', { type: 'invoice', id: claim.invoice_id }, now, {
    claim: { id: claim.id, status: 'submitting' },
  });
  return claim;
}

export async function resubmitClaim(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: ClaimRequest,
  now: Date,
): Promise<ClaimRow> {
  const { record, claim, coverage } = await gatherClaim(trx, billing, invoiceId, request);
  const decision = decideResubmission({ invoice: claimableOf(record), claim, coverage });
  if (!decision.claimable) throw refusalOf(decision);
  const sentUnder = {
    coverageId: decision.coverage.id,
    placeOfServiceCode: request.placeOfServiceCode ?? decision.claim.place_of_service_code,
  };
  if (decision.reverseFirst) {
    // Accepted lines must not be billed twice: reverse first, then send again by itself, under the
    // coverage and place of service this request names (the invoice cannot be amended while the
    // claim is reversing).
    return startReversal(
      trx,
      billing,
      decision.claim,
      now,
      sentUnder,
      'Resubmission of a partially accepted claim',
    );
  }
  const updated = await setClaimStatus(
    trx,
    billing,
    decision.claim,
    'submitting',
    {
      message: null,
      authorization_reference: null,
      coverage_id: sentUnder.coverageId,
      place_of_service_code: sentUnder.placeOfServiceCode,
      submission_id: newId('submission'),
      submission_started_at: now,
      submitted_at: now,
      resubmit_after_reversal: false,
    },
    now,
  );
  await queueSubmission(trx, billing, updated, now, { record, coverage: decision.coverage });
  return updated;
}

/** What a resubmission sent once the reversal is through is sent under (the reverse job carries it). */
type ResubmitAfterReversal = NonNullable<Static<typeof CLAIM_JOBS.reverse.payload>['resubmit']>;

async function startReversal(
  trx: Trx,
  billing: PracticeBilling,
  claim: ClaimRow,
  now: Date,
  thenResubmit: ResubmitAfterReversal | null,
  reason: string | null,
) {
  const updated = await setClaimStatus(
    trx,
    billing,
    claim,
    'reversing',
    {
      message: null,
      resubmit_after_reversal: thenResubmit !== null,
      submission_started_at: now,
      reversal_reason: reason,
    },
    now,
  );
  await enqueueJob(
    trx,
    billing.id,
    CLAIM_JOBS.reverse,
    { claimId: claim.id, reversalId: newId('submission'), reason, resubmit: thenResubmit },
    now,
  );
  return updated;
}

export async function reverseClaim(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  reason: string | null,
  now: Date,
): Promise<ClaimRow> {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  const claim = await findClaimOfInvoice(trx, billing.id, invoiceId, true);
  if (!claim)
    throw new AppError('business_rule', `Invoice ${record.invoice.number} has no claim to reverse.`);
  if (!REVERSIBLE.includes(claim.status)) {
    throw new AppError(
      'business_rule',
      `The claim is ${claim.status}; only an accepted or partially accepted claim, or one whose reversal failed, can be reversed.`,
    );
  }
  return startReversal(trx, billing, claim, now, null, reason);
}
