// Owns the background work of claims: sending a submission or a reversal to the insurer and
// recording its answer, retrying an insurer that does not answer (with backoff, until the answer
// window closes, when the claim is rejected saying so), and paying approved benefits as the
// insurer's remittance. Each job judges, with the claim locked, whether it is still waiting for this
// very message before recording anything, so a retried or duplicated job never records an answer
// twice.
import { findCoverage } from '../insurance/service.ts';
import type { ClaimSubmission, Insurer } from '../insurer/port.ts';
import { recordRemittanceOn, takeBackInsurerPayments } from '../invoices/payments.ts';
import { lockInvoice, readInvoice } from '../invoices/service.ts';
import { lockInvoiceRowWithInsurerPaid } from '../invoices/store.ts';
import { handedOverWith } from '../jobs/handoff.ts';
import { checkedPayload } from '../jobs/kind.ts';
import { enqueueJob, finishJob, type JobRow, rescheduleJob, retryJob } from '../jobs/queue.ts';
import type { Database } from '../platform/db/database.ts';
import { inPractice, type Trx } from '../platform/db/transaction.ts';
import { faultPoint } from '../platform/fault-points.ts';
import { newId } from '../platform/ids.ts';
import { countClaimAnswer } from '../platform/observability/metrics.ts';
import { inSpan, PRACTICE_ID } from '../platform/observability/spans.ts';
import { type PracticeBilling, practiceBilling } from '../practices/service.ts';
import { answerEffect } from './answer.ts';
import { CLAIM_JOBS } from './job-kinds.ts';
import { decideRemittance } from './remittance.ts';
import { setClaimStatus } from './service.ts';
import { type ClaimRow, findClaim, findClaimWithBenefit, insertClaimItems } from './store.ts';
import { submissionOf } from './submission.ts';

export interface ClaimJobContext {
  db: Database;
  insurer: Insurer;
  now: () => Date;
  /** How long the insurer may stay silent before a claim (or reversal) is given up. */
  answerWindowMs: number;
  /** When approved benefits are paid after an acceptance; null when the insurer does not pay here. */
  remittanceDelayMs: number | null;
}

/** How long a remittance waits before trying again while its invoice is being amended or its claim reversed. */
export const REMITTANCE_RETRY_MS = 60_000;

/** Delays between attempts at an insurer that did not answer. */
export const RETRY_DELAYS_MS = [2_000, 5_000, 15_000, 30_000, 60_000, 120_000, 300_000];

function retryDelay(attempts: number): number {
  return RETRY_DELAYS_MS[Math.min(attempts - 1, RETRY_DELAYS_MS.length - 1)]!;
}

/** A window's length as a person reads it: "30 seconds" under a minute, else "1 minute", "5 minutes". */
export function windowWording(ms: number): string {
  if (ms < 60_000) {
    const seconds = Math.max(1, Math.round(ms / 1000));
    return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  }
  const minutes = Math.round(ms / 60_000);
  return `${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
}

/** Retries the job, or returns false when the next attempt would fall outside the answer window. */
async function retryWithinWindow(
  ctx: ClaimJobContext,
  job: JobRow,
  startedAt: Date,
  error: unknown,
): Promise<boolean> {
  // The window is the claim's, on the service clock; the job then waits the delay on the database's.
  const delay = retryDelay(job.attempts);
  if (ctx.now().getTime() + delay > startedAt.getTime() + ctx.answerWindowMs) return false;
  await retryJob(ctx.db, job, delay, error instanceof Error ? error.message : String(error));
  return true;
}

export async function runSubmitJob(ctx: ClaimJobContext, job: JobRow): Promise<void> {
  const { claimId, submissionId, prepared: sent } = checkedPayload(CLAIM_JOBS.submit, job.payload);
  const ids = { claimId, submissionId };
  // Built when the claim was sent, or read here; whether the claim still waits for it is judged when
  // the answer is recorded (a repeated message gets the insurer's first answer).
  const prepared: PreparedSubmission | undefined = sent
    ? {
        submission: sent.submission,
        startedAt: new Date(sent.startedAt),
        billing: sent.billing,
        invoiceId: sent.invoiceId,
      }
    : await inPractice(ctx.db, job.practice_id, (trx) => prepareSubmission(ctx, trx, job, ids));
  if (!prepared) return;
  let answer: SubmitAnswer;
  try {
    answer = await inSpan(
      'insurer submit',
      { [PRACTICE_ID]: job.practice_id, 'practice_billing.claim.id': claimId },
      async (span) => {
        const answered = await ctx.insurer.submit(prepared.submission);
        span?.setAttribute('practice_billing.claim.outcome', answered.status);
        return answered;
      },
      { role: 'client' },
    );
  } catch (error) {
    if (await retryWithinWindow(ctx, job, prepared.startedAt, error)) return;
    countClaimAnswer('unanswered');
    await recording(ctx, job.practice_id, (trx) => rejectUnanswered(ctx, trx, job, prepared, ids));
    return;
  }
  faultPoint('claim.after_insurer_answer');
  countClaimAnswer(answer.status);
  await recording(ctx, job.practice_id, (trx) => recordAnswer(ctx, trx, job, prepared, ids, answer));
}

/**
 * A transaction that records what the insurer said: it changes the claim's invoice and records events,
 * so its frame takes their change stamp (TransactionPlans).
 */
function recording<T>(ctx: ClaimJobContext, practiceId: string, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return inPractice(ctx.db, practiceId, fn, { stamps: true });
}

type SubmitAnswer = Awaited<ReturnType<Insurer['submit']>>;
type SubmissionIds = { claimId: string; submissionId: string };
interface PreparedSubmission {
  submission: ClaimSubmission;
  startedAt: Date;
  /** The practice's settings when this job read them already, or the transaction that sent the claim did. */
  billing: PracticeBilling | undefined;
  invoiceId: string;
}

/**
 * The submission of a claim still submitting this submission, with the practice's settings as it was
 * prepared (one read per job, not one per transaction); otherwise the job ends.
 */
async function prepareSubmission(
  ctx: ClaimJobContext,
  trx: Trx,
  job: JobRow,
  ids: SubmissionIds,
): Promise<PreparedSubmission | undefined> {
  const practiceId = job.practice_id;
  const claim = await findClaim(trx, practiceId, ids.claimId);
  if (claim?.status !== 'submitting' || claim.submission_id !== ids.submissionId) {
    await finishJob(trx, job, ctx.now());
    return undefined;
  }
  const billing = await practiceBilling(trx, practiceId);
  const record = await readInvoice(trx, practiceId, claim.invoice_id);
  const coverage = (await findCoverage(trx, practiceId, claim.coverage_id))!;
  const submission = submissionOf(claim, record, coverage);
  return { submission, startedAt: claim.submission_started_at, billing, invoiceId: claim.invoice_id };
}

/** The insurer did not answer within the claim's window: the claim, if still this submission's, is rejected. */
async function rejectUnanswered(
  ctx: ClaimJobContext,
  trx: Trx,
  job: JobRow,
  { billing: known, invoiceId }: PreparedSubmission,
  { claimId, submissionId }: SubmissionIds,
): Promise<void> {
  const practiceId = job.practice_id;
  const billing = known ?? (await practiceBilling(trx, practiceId));
  // The invoice first, as every change of its claim locks it: a claim's invoice never changes.
  await lockInvoice(trx, practiceId, invoiceId);
  const claim = await findClaim(trx, practiceId, claimId, true);
  if (claim && claim.status === 'submitting' && claim.submission_id === submissionId) {
    await setClaimStatus(
      trx,
      billing,
      claim,
      'rejected',
      {
        message: `The insurer did not answer within ${windowWording(ctx.answerWindowMs)}; the claim was not accepted. Resubmit it to try again.`,
      },
      ctx.now(),
    );
  }
  await finishJob(trx, job, ctx.now());
}

/**
 * The insurer's answer, when the claim is still this submission's: its items, its status, and the
 * remittance job when it was not rejected. Gathers the locked claim, decides (answerEffect), writes.
 */
async function recordAnswer(
  ctx: ClaimJobContext,
  trx: Trx,
  job: JobRow,
  prepared: PreparedSubmission,
  { claimId, submissionId }: SubmissionIds,
  answer: SubmitAnswer,
): Promise<void> {
  const practiceId = job.practice_id;
  const now = ctx.now();
  // The invoice first, as every change of its claim locks it (a claim's invoice never changes); the
  // claim is read once, locked.
  await lockInvoice(trx, practiceId, prepared.invoiceId);
  const claim = await findClaim(trx, practiceId, claimId, true);
  const effect = answerEffect(
    claim && { status: claim.status, submissionId: claim.submission_id },
    { submissionId, lines: prepared.submission.lines },
    answer,
    ctx.remittanceDelayMs !== null,
  );
  if (effect.kind === 'stale') {
    await finishJob(trx, job, now);
    return;
  }
  // A claim submitting has no items: a new submission starts without (setClaimStatus).
  await insertClaimItems(trx, practiceId, claimId, effect.items);
  const billing = prepared.billing ?? (await practiceBilling(trx, practiceId));
  await setClaimStatus(trx, billing, claim!, effect.status, effect.fields, now);
  if (effect.remittance) {
    await enqueueJob(
      trx,
      practiceId,
      CLAIM_JOBS.remittance,
      { claimId, submissionId, invoiceId: prepared.invoiceId },
      now,
      ctx.remittanceDelayMs!,
      // Following on in this worker, it pays with the practice's settings read here.
      billing,
    );
  }
  await finishJob(trx, job, now);
}

export async function runReverseJob(ctx: ClaimJobContext, job: JobRow): Promise<void> {
  const { claimId, reversalId, reason, resubmit } = checkedPayload(CLAIM_JOBS.reverse, job.payload);
  const practiceId = job.practice_id;
  const prepared = await inPractice(ctx.db, practiceId, async (trx) => {
    const claim = await findClaim(trx, practiceId, claimId);
    if (claim?.status !== 'reversing') {
      await finishJob(trx, job, ctx.now());
      return undefined;
    }
    const coverage = (await findCoverage(trx, practiceId, claim.coverage_id))!;
    return { claim, memberNumber: coverage.member_number };
  });
  if (!prepared) return;

  let outcome: { reversed: true } | { reversed: false; message: string };
  try {
    outcome = await ctx.insurer.reverse({
      reversalId,
      claimId,
      submissionId: prepared.claim.submission_id,
      authorizationReference: prepared.claim.authorization_reference,
      member: { memberNumber: prepared.memberNumber },
      reason: reason ?? null,
    });
  } catch (error) {
    if (await retryWithinWindow(ctx, job, prepared.claim.submission_started_at, error)) return;
    outcome = {
      reversed: false,
      message: `The insurer did not answer the reversal within ${windowWording(ctx.answerWindowMs)}.`,
    };
  }

  await recording(ctx, practiceId, async (trx) => {
    const now = ctx.now();
    await lockInvoice(trx, practiceId, prepared.claim.invoice_id);
    const claim = await findClaim(trx, practiceId, claimId, true);
    if (claim?.status !== 'reversing') {
      await finishJob(trx, job, now);
      return;
    }
    const billing = await practiceBilling(trx, practiceId);
    if (!outcome.reversed) {
      await setClaimStatus(
        trx,
        billing,
        claim,
        'reversal_failed',
        { message: outcome.message, resubmit_after_reversal: false },
        now,
      );
    } else {
      await recordReversed(trx, billing, claim, resubmit, now);
    }
    await finishJob(trx, job, now);
  });
}

/** The insurer reversed the claim: its payments go back, and the claim is sent again when asked. */
async function recordReversed(
  trx: Trx,
  billing: PracticeBilling,
  claim: ClaimRow,
  resubmit: { coverageId: string; placeOfServiceCode: string | null } | null | undefined,
  now: Date,
): Promise<void> {
  const reversed = await setClaimStatus(trx, billing, claim, 'reversed', { message: null }, now);
  // The insurer's money goes back with its acceptance, so the invoice owes it again.
  await takeBackInsurerPayments(trx, billing, claim.invoice_id, claim.authorization_reference, now);
  if (!claim.resubmit_after_reversal) return;
  const resent = await setClaimStatus(
    trx,
    billing,
    reversed,
    'submitting',
    {
      authorization_reference: null,
      ...(resubmit
        ? { coverage_id: resubmit.coverageId, place_of_service_code: resubmit.placeOfServiceCode }
        : {}),
      submission_id: newId('submission'),
      submission_started_at: now,
      submitted_at: now,
      resubmit_after_reversal: false,
    },
    now,
  );
  await enqueueJob(
    trx,
    billing.id,
    CLAIM_JOBS.submit,
    { claimId: claim.id, submissionId: resent.submission_id },
    now,
  );
}

/**
 * Pays the approved benefits of an accepted claim as the insurer's payment on the invoice, net of what
 * the insurer already paid on it (a confirmed reversal takes the insurer's payments back). While a
 * reversal is under way the payment waits for its end: paid if it fails, never if it is confirmed.
 * Gathers the claim and the locked invoice, decides (decideRemittance), then writes.
 */
export async function runRemittanceJob(ctx: ClaimJobContext, job: JobRow): Promise<void> {
  const { claimId, submissionId, invoiceId: queuedFor } = checkedPayload(CLAIM_JOBS.remittance, job.payload);
  const practiceId = job.practice_id;
  await recording(ctx, practiceId, async (trx) => {
    const now = ctx.now();
    // The invoice is locked before the claim is read, in the order the reverse job takes them: a
    // reversal confirmed before the lock is seen (each statement reads what has committed), and none
    // is confirmed until this transaction ends. A claim's invoice never changes, so reading it
    // unlocked for a payload without it is safe.
    const invoiceId = queuedFor ?? (await findClaim(trx, practiceId, claimId))?.invoice_id;
    const locked = invoiceId ? await lockInvoiceRowWithInsurerPaid(trx, practiceId, invoiceId) : undefined;
    const claim = locked ? await findClaimWithBenefit(trx, practiceId, claimId) : undefined;
    const decision = decideRemittance({
      submissionId,
      ...(claim && {
        claim: {
          submissionId: claim.submission_id,
          status: claim.status,
          approvedBenefit: Number(claim.approved_benefit),
        },
      }),
      ...(locked && {
        invoice: { status: locked.status, insurerPaid: Number(locked.insurer_paid) },
      }),
    });
    if (decision.kind === 'wait') {
      await rescheduleJob(trx, job, REMITTANCE_RETRY_MS, decision.reason);
      return;
    }
    if (decision.kind === 'pay') {
      const { insurer_paid: _paid, ...invoice } = locked!;
      await recordRemittanceOn(
        trx,
        (handedOverWith(job) as PracticeBilling | undefined) ?? (await practiceBilling(trx, practiceId)),
        invoice,
        { amount: decision.amount, reference: claim!.authorization_reference },
        now,
      );
    }
    await finishJob(trx, job, now);
  });
}
