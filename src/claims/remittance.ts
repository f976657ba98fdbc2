// Owns what a remittance does, decided from plain values and nothing else: pay the insurer's approved
// benefit on the invoice (net of what the insurer already paid and did not take back, never capped at
// the balance: a patient who paid first is owed the difference as the invoice's creditDue), wait (a
// reversal under way, an invoice being amended), or do nothing. The remittance job (src/claims/jobs.ts)
// gathers the values, asks here, and writes what is decided.
import { REMITTABLE_STATUSES } from '../invoices/payment-status.ts';
import type { InvoiceStatus } from '../invoices/schemas.ts';

/**
 * Claim statuses in which the insurer still stands by the acceptance the remittance pays: accepted in
 * whole or in part, or a reversal of it that failed (the acceptance stands, so does its money).
 */
const REMITTED_STATUSES: readonly string[] = ['accepted', 'partially_accepted', 'reversal_failed'];

/** What the remittance job read: the claim with its approved benefit, and the locked invoice. */
export interface RemittanceFacts {
  /** The submission the remittance was queued for. */
  submissionId: string;
  claim?: { submissionId: string | null; status: string; approvedBenefit: number };
  invoice?: { status: string; insurerPaid: number };
}

export type RemittanceDecision =
  | { kind: 'pay'; amount: number }
  | { kind: 'wait'; reason: 'the claim is being reversed' | 'invoice is being amended' }
  | { kind: 'nothing' };

/** What a remittance does with these facts. */
export function decideRemittance({ submissionId, claim, invoice }: RemittanceFacts): RemittanceDecision {
  if (!claim || !invoice || claim.submissionId !== submissionId) return { kind: 'nothing' };
  if (claim.status === 'reversing') return { kind: 'wait', reason: 'the claim is being reversed' };
  if (!REMITTED_STATUSES.includes(claim.status)) return { kind: 'nothing' };
  const amount = claim.approvedBenefit - invoice.insurerPaid;
  if (amount <= 0) return { kind: 'nothing' };
  // The practice is changing the invoice: pay once it is issued again, not never.
  if (invoice.status === 'amending' || invoice.status === 'draft') {
    return { kind: 'wait', reason: 'invoice is being amended' };
  }
  if (!REMITTABLE_STATUSES.includes(invoice.status as InvoiceStatus)) return { kind: 'nothing' };
  return { kind: 'pay', amount };
}
