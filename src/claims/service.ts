// Owns the claim lifecycle on our side. A claim is sent (submitting), the insurer's answer makes it
// accepted, partially_accepted or rejected; a reversal goes reversing → reversed or reversal_failed;
// a resubmission of a rejected or reversed claim is sent again from the invoice's current lines, and
// one of a partially accepted claim is reversed first, then sent by itself. One rule (`resubmission`)
// decides both whether resubmit is accepted and what the claim's `resubmittable` says. Every status change
// updates the invoice's claimStatus and writes claim.status_changed in the same transaction; the
// insurer is called only by background jobs enqueued in that transaction.
import type { Static } from 'typebox';
import {
  type CoverageRow,
  coverageOfPatient,
  firstActiveCoverage,
  notPatientsCoverage,
  serviceDaysOf,
} from '../insurance/service.ts';
import { OWING_STATUSES } from '../invoices/payment-status.ts';
import type { InvoiceStatus } from '../invoices/schemas.ts';
import { readInvoice, touchInvoice } from '../invoices/service.ts';
import type { InvoiceRecord, InvoiceRow } from '../invoices/store.ts';
import { enqueueJob } from '../jobs/queue.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { CLAIM_JOBS } from './job-kinds.ts';
import type { Claim, ClaimRequest, ClaimStatus } from './schemas.ts';
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
/** Claim statuses resubmit takes: a partially accepted claim is reversed first, then sent again. */
const RESUBMITTABLE: readonly string[] = ['rejected', 'reversed', 'partially_accepted'];
const REVERSIBLE: readonly string[] = ['accepted', 'partially_accepted', 'reversal_failed'];

/**
 * The claim as the API shows it. `invoiceClaimable` says whether the invoice could be claimed now
 * under the claim's coverage (`claimReadiness`), so `resubmittable` is the rule the resubmit action
 * applies (`resubmission`): true exactly when a resubmission without a body would be accepted.
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
  const readiness = await claimReadiness(trx, billing, record, {}, claim.coverage_id);
  return claimOf(claim, await claimItems(trx, billing.id, claim.id), readiness.ready);
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

const NO_ACTIVE_COVERAGE =
  "The patient has no active coverage on the invoice's dates of service; add one to the patient's coverages or send coverageId.";

/** Why the invoice cannot be claimed now, or the coverage to claim under. */
async function claimReadiness(
  trx: Trx,
  billing: PracticeBilling,
  record: InvoiceRecord,
  request: ClaimRequest,
  lastCoverageId: string | null,
  known?: CoverageRow | null,
): Promise<{ ready: true; coverage: CoverageRow } | { ready: false; reason: string }> {
  const invoice = record.invoice;
  if (!OWING_STATUSES.includes(invoice.status as InvoiceStatus)) {
    return {
      ready: false,
      reason: `Invoice ${invoice.number} is ${invoice.status}; only an issued, partially paid or overdue invoice can be claimed.`,
    };
  }
  if (record.lines.length === 0)
    return { ready: false, reason: `Invoice ${invoice.number} has no lines to claim.` };
  const withoutPrimary = record.lines.findIndex((l) => !l.diagnoses.some((d) => d.primary));
  if (withoutPrimary >= 0) {
    return {
      ready: false,
      reason: `Line ${withoutPrimary + 1} (${record.lines[withoutPrimary]!.code}) has no primary diagnosis; add one before claiming.`,
    };
  }
  // The coverage the caller already found by these same rules (the bill's), or null for none.
  if (known !== undefined) {
    return known
      ? { ready: true, coverage: known }
      : {
          ready: false,
          reason: NO_ACTIVE_COVERAGE,
        };
  }
  const coverageId = request.coverageId ?? lastCoverageId;
  if (coverageId) {
    const coverage = await coverageOfPatient(trx, billing.id, invoice.patient_id, coverageId);
    if (coverage) return { ready: true, coverage };
    if (request.coverageId) throw notPatientsCoverage();
  }
  const servicedOn = serviceDaysOf(record.lines);
  const active = await firstActiveCoverage(trx, billing.id, invoice.patient_id, servicedOn);
  if (!active) return { ready: false, reason: NO_ACTIVE_COVERAGE };
  return { ready: true, coverage: active };
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

/** Sends the invoice's first claim. Throws business_rule with the reason when it cannot. */
export async function sendClaim(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: ClaimRequest,
  now: Date,
): Promise<ClaimRow> {
  return (await sendClaimOf(trx, billing, invoiceId, request, now)).claim;
}

/**
 * sendClaim, answering the invoice as the claim leaves it too. `created` is an invoice this transaction
 * created (it holds the row already, and the invoice can have no claim); `knownCoverage` the coverage
 * the caller found by the claim's own rules (null: none).
 */
async function sendClaimOf(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: ClaimRequest,
  now: Date,
  created?: InvoiceRecord,
  knownCoverage?: CoverageRow | null,
): Promise<{ claim: ClaimRow; invoice: InvoiceRow; submit: () => Promise<void> }> {
  const record = created ?? (await readInvoice(trx, billing.id, invoiceId, true));
  const existing = created ? undefined : await findClaimOfInvoice(trx, billing.id, invoiceId, true);
  if (existing) {
    const next = REVERSIBLE.includes(existing.status)
      ? 'reverse it, or resubmit'
      : RESUBMITTABLE.includes(existing.status)
        ? 'resubmit it'
        : 'wait for the insurer to answer';
    throw new AppError(
      'business_rule',
      `Invoice ${record.invoice.number} already has a claim that is ${existing.status}; ${next}.`,
    );
  }
  const readiness = await claimReadiness(trx, billing, record, request, null, knownCoverage);
  if (!readiness.ready) throw new AppError('business_rule', readiness.reason);
  const claim = await insertClaim(trx, {
    practice_id: billing.id,
    id: newId('claim'),
    invoice_id: invoiceId,
    status: 'submitting',
    message: null,
    authorization_reference: null,
    submitted_at: now,
    currency: record.invoice.currency,
    coverage_id: readiness.coverage.id,
    place_of_service_code: request.placeOfServiceCode ?? record.invoice.place_of_service_code,
    submission_id: newId('submission'),
    submission_started_at: now,
    created_at: now,
    updated_at: now,
  });
  // An invoice this transaction created may have been inserted as its claim leaves it (the bill).
  const touched =
    created?.invoice.claim_status === 'submitting' && created.invoice.coverage_id === claim.coverage_id
      ? { row: created.invoice }
      : await touchInvoice(trx, billing, invoiceId, {
          claim_status: 'submitting',
          coverage_id: claim.coverage_id,
        });
  await recordEvent(trx, billing.id, 'claim.status_changed', { type: 'invoice', id: invoiceId }, now, {
    claim: { id: claim.id, status: 'submitting' },
  });
  // A new invoice (`created`) is numbered last in its transaction, with the COMMIT: its submission is
  // queued behind the number, whose provisional stand-in it carries until then
  // (src/invoices/store.ts, numberInvoiceAtCommit).
  const submit = () => queueSubmission(trx, billing, claim, now, { record, coverage: readiness.coverage });
  if (!created) await submit();
  return { claim, invoice: touched.row, submit: created ? submit : async () => {} };
}

/** Bill's submitClaim: queue the claim, or say why it was not sent. */
export async function queueClaimFromBill(
  trx: Trx,
  billing: PracticeBilling,
  created: InvoiceRecord,
  request: ClaimRequest & { coverage: CoverageRow | null },
  now: Date,
): Promise<
  | { queued: true; invoice: InvoiceRow; submit: () => Promise<void> }
  | { queued: false; reason: string; invoice: InvoiceRow }
> {
  try {
    const { coverage, ...claimRequest } = request;
    const sent = await sendClaimOf(trx, billing, created.invoice.id, claimRequest, now, created, coverage);
    return { queued: true, invoice: sent.invoice, submit: sent.submit };
  } catch (error) {
    if (error instanceof AppError && (error.code === 'business_rule' || error.code === 'validation_failed')) {
      // Inserted as a claim would have left it: no claim was sent, so the row says none.
      const invoice =
        created.invoice.claim_status === null
          ? created.invoice
          : (await touchInvoice(trx, billing, created.invoice.id, { claim_status: null, coverage_id: null }))
              .row;
      return { queued: false, reason: error.errors?.[0]?.message ?? error.detail, invoice };
    }
    throw error;
  }
}

/**
 * Whether the claim can be resubmitted now with this request, and under which coverage: the claim is
 * rejected, reversed or partially accepted, and the invoice is claim-ready as for a first claim. The
 * claim's `resubmittable` field (`claimOf`) is this rule applied to an empty request.
 */
async function resubmission(
  trx: Trx,
  billing: PracticeBilling,
  record: InvoiceRecord,
  claim: ClaimRow,
  request: ClaimRequest,
): Promise<{ ready: true; coverage: CoverageRow } | { ready: false; reason: string }> {
  if (!RESUBMITTABLE.includes(claim.status)) {
    return {
      ready: false,
      reason: `The claim is ${claim.status}; only a rejected, reversed or partially accepted claim can be resubmitted.`,
    };
  }
  return claimReadiness(trx, billing, record, request, claim.coverage_id);
}

export async function resubmitClaim(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: ClaimRequest,
  now: Date,
): Promise<ClaimRow> {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  const claim = await findClaimOfInvoice(trx, billing.id, invoiceId, true);
  if (!claim)
    throw new AppError('business_rule', `Invoice ${record.invoice.number} has no claim yet; send it first.`);
  const readiness = await resubmission(trx, billing, record, claim, request);
  if (!readiness.ready) throw new AppError('business_rule', readiness.reason);
  if (claim.status === 'partially_accepted') {
    // Accepted lines must not be billed twice: reverse first, then send again by itself, under the
    // coverage and place of service this request names (the invoice cannot be amended while the
    // claim is reversing).
    return startReversal(
      trx,
      billing,
      claim,
      now,
      {
        coverageId: readiness.coverage.id,
        placeOfServiceCode: request.placeOfServiceCode ?? claim.place_of_service_code,
      },
      'Resubmission of a partially accepted claim',
    );
  }
  const updated = await setClaimStatus(
    trx,
    billing,
    claim,
    'submitting',
    {
      message: null,
      authorization_reference: null,
      coverage_id: readiness.coverage.id,
      place_of_service_code: request.placeOfServiceCode ?? claim.place_of_service_code,
      submission_id: newId('submission'),
      submission_started_at: now,
      submitted_at: now,
      resubmit_after_reversal: false,
    },
    now,
  );
  await queueSubmission(trx, billing, updated, now, { record, coverage: readiness.coverage });
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
