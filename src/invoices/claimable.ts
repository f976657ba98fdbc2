// Owns whether an invoice can be claimed now, decided from plain values: it is owed on (issued,
// partially paid or overdue), has lines, each with a primary diagnosis, and there is a coverage to claim
// under (one asked for must be the patient's). One rule for every way a claim starts: the bill's
// submitClaim (bill-decision.ts), a claim sent or resubmitted (src/claims/sending.ts), and what a
// claim's `resubmittable` says. Here rather than in claims/ so that the bill, which claims may import
// but not the other way round, asks the same rule.
import { type CoverageFound, type CoverageRow, NOT_PATIENTS_COVERAGE } from '../insurance/service.ts';
import { OWING_STATUSES } from './payment-status.ts';
import type { InvoiceStatus } from './schemas.ts';

/** What the rule reads of the invoice. */
export interface ClaimableInvoice {
  number: string;
  status: string;
  lines: readonly { code: string; diagnoses: readonly { primary: boolean }[] }[];
}

/**
 * A claim may go, under this coverage; or not, and why: `field` names the request's field to blame (a
 * 422 naming it), null when the invoice or its claim is why (business_rule).
 */
export type ClaimVerdict =
  | { claimable: true; coverage: CoverageRow }
  | { claimable: false; reason: string; field: 'coverageId' | null };

export const NO_ACTIVE_COVERAGE =
  "The patient has no active coverage on the invoice's dates of service; add one to the patient's coverages or send coverageId.";

/** Whether the invoice can be claimed under the coverage found for it. */
export function claimVerdict(invoice: ClaimableInvoice, coverage: CoverageFound): ClaimVerdict {
  const refusal = invoiceRefusal(invoice);
  if (refusal !== null) return { claimable: false, reason: refusal, field: null };
  if (coverage.kind === 'not_patients') {
    return { claimable: false, reason: NOT_PATIENTS_COVERAGE, field: 'coverageId' };
  }
  if (coverage.kind === 'none') return { claimable: false, reason: NO_ACTIVE_COVERAGE, field: null };
  return { claimable: true, coverage: coverage.coverage };
}

/** Why the invoice itself cannot be claimed, whatever the coverage, or null. */
function invoiceRefusal({ number, status, lines }: ClaimableInvoice): string | null {
  if (!OWING_STATUSES.includes(status as InvoiceStatus)) {
    return `Invoice ${number} is ${status}; only an issued, partially paid or overdue invoice can be claimed.`;
  }
  if (lines.length === 0) return `Invoice ${number} has no lines to claim.`;
  const withoutPrimary = lines.findIndex((line) => !line.diagnoses.some((d) => d.primary));
  if (withoutPrimary >= 0) {
    return `Line ${withoutPrimary + 1} (${lines[withoutPrimary]!.code}) has no primary diagnosis; add one before claiming.`;
  }
  return null;
}
