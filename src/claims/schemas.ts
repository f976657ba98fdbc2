// Owns the Claim resource and ClaimRequest shapes.
import { type Static, Type } from 'typebox';
import { Enum, Nullable } from '../platform/http/schema.ts';

export const CLAIM_STATUSES = [
  'submitting',
  'accepted',
  'rejected',
  'partially_accepted',
  'reversed',
  'reversal_failed',
  'reversing',
] as const;
export type ClaimStatus = (typeof CLAIM_STATUSES)[number];

const Note = Type.Object({ code: Type.String(), description: Type.String() });

export const Claim = Type.Object(
  {
    object: Type.Literal('claim'),
    id: Type.String(),
    invoiceId: Type.String(),
    status: Enum(CLAIM_STATUSES),
    outcome: Enum(['queued', 'complete', 'partial', 'error'], {
      description:
        'queued: the insurer has not answered; complete: every line accepted (or reversed); partial: some accepted; error: refused.',
    }),
    message: Nullable(
      Type.String({
        description: "The insurer's reason when the claim or its reversal failed, or why it was not sent.",
      }),
    ),
    reversalReason: Nullable(
      Type.String({
        description:
          "The reason given when the claim's latest reversal was asked for (POST .../claim/reverse with `reason`); null when none was given or the claim was never reversed. The request's audit row carries the same words in `reason`.",
      }),
    ),
    resubmittable: Type.Boolean({
      description:
        'True exactly when `POST .../claim/resubmit` without a body would be accepted now: the claim is rejected, reversed or partially accepted, and the invoice is claim-ready (issued, partially paid or overdue, with lines that each have a primary diagnosis, and a coverage).',
    }),
    reversible: Type.Boolean({
      description: 'True when the insurer accepted some or all of it, or a reversal failed.',
    }),
    authorizationReference: Nullable(Type.String()),
    submittedAt: Nullable(Type.String({ format: 'date-time' })),
    currency: Type.String(),
    items: Type.Array(
      Type.Object({
        lineNumber: Type.Integer({ description: 'Line position, starting at 1.' }),
        lineItemId: Nullable(Type.String()),
        decision: Enum(['approved', 'approved_with_warning', 'denied']),
        submitted: Nullable(Type.Integer()),
        benefit: Nullable(Type.Integer()),
        rejections: Type.Array(Note),
        warnings: Type.Array(Note),
      }),
    ),
  },
  { title: 'Claim' },
);
export type Claim = Static<typeof Claim>;

export const ClaimRequest = Type.Object(
  {
    coverageId: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description:
            "Default: the coverage the invoice was last claimed against, else the patient's first active one.",
        }),
      ),
    ),
    placeOfServiceCode: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 10,
          description: "The insurer's coding; default: the invoice's own.",
        }),
      ),
    ),
  },
  { title: 'ClaimRequest', additionalProperties: false },
);
export type ClaimRequest = Static<typeof ClaimRequest>;

export const ReverseRequest = Type.Object(
  { reason: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))) },
  { title: 'ReverseRequest', additionalProperties: false },
);
