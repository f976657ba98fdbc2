// Owns whether a claim is sent, or sent again, now, decided from plain values: the invoice, its claim
// (if any) and the coverage found for it. The claim's own state comes first (an invoice has one claim;
// only a rejected, reversed or partially accepted one is sent again, the last reversed first), then the
// claim rule every claim shares (src/invoices/claimable.ts). The claim actions (service.ts) gather the
// values, ask here, and write what is decided; a claim's `resubmittable` is decideResubmission's answer
// to a request without a body.
import type { CoverageFound, CoverageRow } from '../insurance/service.ts';
import { type ClaimableInvoice, type ClaimVerdict, claimVerdict } from '../invoices/claimable.ts';

/** Claim statuses resubmit takes: a partially accepted claim is reversed first, then sent again. */
export const RESUBMITTABLE: readonly string[] = ['rejected', 'reversed', 'partially_accepted'];
export const REVERSIBLE: readonly string[] = ['accepted', 'partially_accepted', 'reversal_failed'];

/** What a claim action read: the invoice, its claim (undefined: none), the coverage found. */
export interface ClaimFacts<C extends { status: string } = { status: string }> {
  invoice: ClaimableInvoice;
  claim: C | undefined;
  coverage: CoverageFound;
}

type Refusal = Extract<ClaimVerdict, { claimable: false }>;

const refused = (reason: string): Refusal => ({ claimable: false, reason, field: null });

/** Whether the invoice's first claim is sent: it has no claim yet, and the claim rule lets it go. */
export function decideSend({ invoice, claim, coverage }: ClaimFacts): ClaimVerdict {
  if (claim) {
    const next = REVERSIBLE.includes(claim.status)
      ? 'reverse it, or resubmit'
      : RESUBMITTABLE.includes(claim.status)
        ? 'resubmit it'
        : 'wait for the insurer to answer';
    return refused(`Invoice ${invoice.number} already has a claim that is ${claim.status}; ${next}.`);
  }
  return claimVerdict(invoice, coverage);
}

export type ResubmitDecision<C> =
  | { claimable: true; claim: C; coverage: CoverageRow; reverseFirst: boolean }
  | Refusal;

/**
 * Whether the claim is sent again: it is rejected, reversed or partially accepted, and the claim rule
 * lets it go as for a first claim. A partially accepted claim is reversed first (`reverseFirst`), so its
 * accepted lines are not paid twice.
 */
export function decideResubmission<C extends { status: string }>({
  invoice,
  claim,
  coverage,
}: ClaimFacts<C>): ResubmitDecision<C> {
  if (!claim) return refused(`Invoice ${invoice.number} has no claim yet; send it first.`);
  if (!RESUBMITTABLE.includes(claim.status)) {
    return refused(
      `The claim is ${claim.status}; only a rejected, reversed or partially accepted claim can be resubmitted.`,
    );
  }
  const verdict = claimVerdict(invoice, coverage);
  if (!verdict.claimable) return verdict;
  return {
    claimable: true,
    claim,
    coverage: verdict.coverage,
    reverseFirst: claim.status === 'partially_accepted',
  };
}
