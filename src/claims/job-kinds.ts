// Owns the claim jobs' kinds and payloads: sending a submission, sending a reversal (and what a
// resubmission after it is sent under), and paying an accepted claim's remittance.
import { Type } from 'typebox';
import type { ClaimSubmission } from '../insurer/port.ts';
import { jobKind } from '../jobs/kind.ts';
import { Nullable } from '../platform/http/schema.ts';
import type { PracticeBilling } from '../practices/service.ts';

export const CLAIM_JOBS = {
  submit: jobKind(
    'claim.submit',
    Type.Object({
      claimId: Type.String(),
      submissionId: Type.String(),
      // The submission as the transaction that sent the claim built it (src/claims/submission.ts).
      prepared: Type.Optional(
        Type.Object({
          invoiceId: Type.String(),
          startedAt: Type.String(),
          submission: Type.Unsafe<ClaimSubmission>(Type.Object({}, { additionalProperties: true })),
          // The practice's settings as that transaction read them: the answer is recorded with them.
          billing: Type.Optional(
            Type.Unsafe<PracticeBilling>(Type.Object({ id: Type.String() }, { additionalProperties: true })),
          ),
        }),
      ),
    }),
  ),
  reverse: jobKind(
    'claim.reverse',
    Type.Object({
      claimId: Type.String(),
      reversalId: Type.String(),
      reason: Type.Optional(Nullable(Type.String())),
      resubmit: Type.Optional(
        Nullable(Type.Object({ coverageId: Type.String(), placeOfServiceCode: Nullable(Type.String()) })),
      ),
    }),
  ),
  remittance: jobKind(
    'insurer.remittance',
    Type.Object({
      claimId: Type.String(),
      submissionId: Type.String(),
      // The claim's invoice, locked before the claim is read; a payload queued without it reads it.
      invoiceId: Type.Optional(Type.String()),
    }),
  ),
} as const;
