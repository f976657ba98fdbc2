// Owns what a claim's submission to the insurer says: the invoice's lines, each with its share of the
// invoice's VAT, with their primary diagnoses and the member's coverage, as of the moment the claim is sent. Built in the transaction that sends
// the claim (which holds the invoice, its lines and the coverage already) and carried by the
// claim.submit job, so the job need not read them again; a job queued without it (a resubmission after
// a reversal) builds it from the rows. The invoice cannot change while its claim is submitting, so the
// two are the same.
import { type CoverageRow, isCoverageActiveOn, serviceDaysOf } from '../insurance/service.ts';
import type { ClaimSubmission } from '../insurer/port.ts';
import { linesWithVat } from '../invoices/money.ts';
import type { InvoiceRecord } from '../invoices/store.ts';
import type { ClaimRow } from './store.ts';

export function submissionOf(
  claim: Pick<ClaimRow, 'id' | 'submission_id' | 'currency' | 'place_of_service_code'>,
  record: InvoiceRecord,
  coverage: CoverageRow,
): ClaimSubmission {
  // Each line is claimed with its share of the invoice's VAT: schemes pay providers VAT-inclusive
  // amounts, up to their own (VAT-inclusive) rates.
  const withVat = linesWithVat(
    record.lines.map((line) => Number(line.total)),
    Number(record.invoice.total_net),
    Number(record.invoice.total_gross),
  );
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
      const amount = withVat[index]!;
      const primary = line.diagnoses.find((d) => d.primary);
      return {
        lineNumber: index + 1,
        lineItemId: line.id,
        system: line.system,
        code: line.code,
        serviceDate: line.service_date,
        quantity: Number(line.quantity),
        amount,
        primaryDiagnosis: primary ? { system: primary.system, code: primary.code } : null,
      };
    }),
  };
}
