// The insurer port: everything the service needs from a medical scheme or claims switch. The
// built-in sandbox insurer implements it; a real switch adapter implements the same interface.
//
// Contract for an adapter:
// - `submit` and `reverse` carry our own message id (`submissionId`, `reversalId`). A retry sends the
//   same id again, and the adapter (or the insurer behind it) must answer a repeated id with the
//   answer it gave the first time, never adjudicating twice.
// - Throw InsurerNoAnswer when the insurer did not answer (time-out, connection refused, 5xx): the
//   service retries with backoff and, past its answer window, rejects the claim saying so.
// - Any other thrown error is treated like no answer.

export interface ClaimLineMessage {
  lineNumber: number;
  lineItemId: string;
  system: string | null;
  code: string;
  serviceDate: string;
  quantity: number;
  /** The line's total with its share of the invoice's VAT (what the scheme is asked to pay), in minor units. */
  amount: number;
  primaryDiagnosis: { system: string | null; code: string } | null;
}

export interface ClaimSubmission {
  submissionId: string;
  claimId: string;
  invoiceNumber: string;
  currency: string;
  placeOfServiceCode: string | null;
  member: {
    planId: string;
    memberNumber: string;
    dependentCode: string | null;
    /** Whether the membership was active on every line's date of service. */
    membershipActive: boolean;
  };
  lines: ClaimLineMessage[];
}

export interface AdjudicatedLine {
  lineNumber: number;
  decision: 'approved' | 'approved_with_warning' | 'denied';
  submitted: number;
  benefit: number | null;
  rejections: Array<{ code: string; description: string }>;
  warnings: Array<{ code: string; description: string }>;
}

export interface SubmitAnswer {
  status: 'accepted' | 'partially_accepted' | 'rejected';
  message: string | null;
  authorizationReference: string | null;
  lines: AdjudicatedLine[];
}

export interface ReversalRequest {
  reversalId: string;
  claimId: string;
  /** The submission being reversed. */
  submissionId: string;
  authorizationReference: string | null;
  member: { memberNumber: string };
  reason: string | null;
}

export type ReverseAnswer = { reversed: true } | { reversed: false; message: string };

export interface Insurer {
  /**
   * True when the service should record approved benefits as the insurer's payment itself (the sandbox).
   * A real adapter leaves it unset: its payments arrive as remittance advice.
   */
  readonly paysRemittances?: boolean;
  submit(submission: ClaimSubmission): Promise<SubmitAnswer>;
  reverse(request: ReversalRequest): Promise<ReverseAnswer>;
}

export class InsurerNoAnswer extends Error {
  constructor(message = 'The insurer did not answer') {
    super(message);
    this.name = 'InsurerNoAnswer';
  }
}
