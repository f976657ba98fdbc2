// Owns what a claim's submission to the insurer says: the invoice's lines with their primary diagnoses
// and the member's coverage, as of the moment the claim is sent. Built in the transaction that sends
// the claim (which holds the invoice, its lines and the coverage already) and carried by the
// claim.submit job, so the job need not read them again; a job queued without it (a resubmission after
// a reversal) builds it from the rows. The invoice cannot change while its claim is submitting, so the
// two are the same.
import { type CoverageRow, isCoverageActiveOn, serviceDaysOf } from '../insurance/service.ts';
import type { ClaimSubmission } from '../insurer/port.ts';
import type { InvoiceRecord } from '../invoices/store.ts';
import type { ClaimRow } from './store.ts';

export function submissionOf(
  claim: Pick<ClaimRow, 'id' | 'submission_id' | 'currency' | 'place_of_service_code'>,
  record: InvoiceRecord,
  coverage: CoverageRow,
): ClaimSubmission {
  return {
    submissionId: claim.submission_id,
    claimId: claim.id,
    invoiceNumber: record.invoice.number,
    currency: claim.currency,
    placeOfServiceCode: claim.place_of_service_code,
    member: {
      planId: coverage.plan_id,
      memberNumber: coverage.member_number,
      dependentCode: coverage.dependent_code,
      // Judged on the dates of service (a line's first and last day), not the day the claim is sent.
      membershipActive: isCoverageActiveOn(coverage, serviceDaysOf(record.lines)),
    },
    lines: record.lines.map((line, index) => {
      const primary = line.diagnoses.find((d) => d.primary);
      return {
        lineNumber: index + 1,
        lineItemId: line.id,
        system: line.system,
        code: line.code,
        serviceDate: line.service_date,
        quantity: Number(line.quantity),
        amount: Number(line.total),
        primaryDiagnosis: primary ? { system: primary.system, code: primary.code } : null,
      };
    }),
  };
}
