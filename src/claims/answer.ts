// Owns what the insurer's answer to a submission does, decided from plain values: nothing when the
// claim no longer waits for this submission (a repeated or late message), else the claim's items (each
// answered line tied to the invoice line it claimed), its new status with the answer's message and
// authorization, and whether a remittance is to follow (an answer not rejected, where remittances run).
// The submit job (src/claims/jobs.ts) gathers the values, asks here, and writes what is decided.
import type { AdjudicatedLine, ClaimSubmission, SubmitAnswer } from '../insurer/port.ts';

/** A claim item as recorded from an answered line (the claim's own keys are the store's to add). */
export interface AnsweredItem {
  line_number: number;
  line_item_id: string | null;
  decision: AdjudicatedLine['decision'];
  submitted: number;
  benefit: number | null;
  rejections: AdjudicatedLine['rejections'];
  warnings: AdjudicatedLine['warnings'];
}

export type AnswerEffect =
  | { kind: 'stale' }
  | {
      kind: 'record';
      items: AnsweredItem[];
      status: SubmitAnswer['status'];
      fields: { message: string | null; authorization_reference: string | null };
      remittance: boolean;
    };

/** What the answer does to a claim found in `claim` (undefined: none), for the submission sent. */
export function answerEffect(
  claim: { status: string; submissionId: string | null } | undefined,
  sent: Pick<ClaimSubmission, 'submissionId' | 'lines'>,
  answer: SubmitAnswer,
  remittances: boolean,
): AnswerEffect {
  if (claim?.status !== 'submitting' || claim.submissionId !== sent.submissionId) return { kind: 'stale' };
  const lineIds = new Map(sent.lines.map((line) => [line.lineNumber, line.lineItemId]));
  return {
    kind: 'record',
    items: answer.lines.map((line) => ({
      line_number: line.lineNumber,
      line_item_id: lineIds.get(line.lineNumber) ?? null,
      decision: line.decision,
      submitted: line.submitted,
      benefit: line.benefit,
      rejections: line.rejections,
      warnings: line.warnings,
    })),
    status: answer.status,
    fields: { message: answer.message, authorization_reference: answer.authorizationReference },
    remittance: answer.status !== 'rejected' && remittances,
  };
}
