// The claim as the API shows it (claimOf in src/claims/service.ts) without a database: the outcome of
// each status, when a claim may be resubmitted (rejected, reversed or partially accepted, and only
// while the invoice can be claimed) or reversed (accepted, partially accepted or a failed reversal), and its items as numbers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CLAIM_STATUSES, type ClaimStatus } from '../../src/claims/schemas.ts';
import { claimOf } from '../../src/claims/service.ts';
import type { ClaimItemRow, ClaimRow } from '../../src/claims/store.ts';

const SUBMITTED_AT = new Date('2026-03-10T08:00:00.000Z');

function row(status: ClaimStatus, submittedAt: Date | null = SUBMITTED_AT): ClaimRow {
  return {
    practice_id: 'org_1',
    id: 'clm_1',
    invoice_id: 'inv_1',
    status,
    message: null,
    authorization_reference: 'AUTH-1',
    submitted_at: submittedAt,
    currency: 'ZAR',
    coverage_id: 'cov_1',
    place_of_service_code: null,
    submission_id: 'sub_1',
    submission_started_at: SUBMITTED_AT,
    resubmit_after_reversal: false,
    reversal_reason: null,
    created_at: SUBMITTED_AT,
    updated_at: SUBMITTED_AT,
  };
}

/** The contract's table of claim statuses: outcome, resubmittable (on a claimable invoice), reversible. */
const EXPECTED: Record<ClaimStatus, { outcome: string; resubmittable: boolean; reversible: boolean }> = {
  submitting: { outcome: 'queued', resubmittable: false, reversible: false },
  reversing: { outcome: 'queued', resubmittable: false, reversible: false },
  accepted: { outcome: 'complete', resubmittable: false, reversible: true },
  reversed: { outcome: 'complete', resubmittable: true, reversible: false },
  partially_accepted: { outcome: 'partial', resubmittable: true, reversible: true },
  rejected: { outcome: 'error', resubmittable: true, reversible: false },
  reversal_failed: { outcome: 'error', resubmittable: false, reversible: true },
};

describe('claim rules', () => {
  test('every claim status has its outcome, resubmittable and reversible', () => {
    assert.deepEqual([...CLAIM_STATUSES].sort(), Object.keys(EXPECTED).sort());
    for (const status of CLAIM_STATUSES) {
      const claim = claimOf(row(status), [], true);
      assert.deepEqual(
        { outcome: claim.outcome, resubmittable: claim.resubmittable, reversible: claim.reversible },
        EXPECTED[status],
        status,
      );
    }
  });

  test('a claim is never resubmittable while its invoice cannot be claimed', () => {
    for (const status of CLAIM_STATUSES) {
      const claim = claimOf(row(status), [], false);
      assert.equal(claim.resubmittable, false, status);
      assert.equal(claim.reversible, EXPECTED[status].reversible, status);
    }
  });

  test('the claim shows its row and its items with amounts as numbers', () => {
    const items: ClaimItemRow[] = [
      {
        practice_id: 'org_1',
        claim_id: 'clm_1',
        line_number: 1,
        line_item_id: 'li_1',
        decision: 'approved_with_warning',
        submitted: 74250,
        benefit: 49500,
        rejections: [],
        warnings: [{ code: 'ABOVE_PLAN_RATE', description: 'Billed above the plan rate.' }],
      },
      {
        practice_id: 'org_1',
        claim_id: 'clm_1',
        line_number: 2,
        line_item_id: null,
        decision: 'denied',
        submitted: null,
        benefit: null,
        rejections: [{ code: 'NOT_COVERED', description: 'Code 0145 is not covered by the plan.' }],
        warnings: [],
      },
    ];
    assert.deepEqual(
      claimOf({ ...row('partially_accepted'), reversal_reason: 'Billed in error' }, items, false),
      {
        object: 'claim',
        id: 'clm_1',
        invoiceId: 'inv_1',
        status: 'partially_accepted',
        outcome: 'partial',
        message: null,
        resubmittable: false,
        reversalReason: 'Billed in error',
        reversible: true,
        authorizationReference: 'AUTH-1',
        submittedAt: '2026-03-10T08:00:00.000Z',
        currency: 'ZAR',
        items: [
          {
            lineNumber: 1,
            lineItemId: 'li_1',
            decision: 'approved_with_warning',
            submitted: 74250,
            benefit: 49500,
            rejections: [],
            warnings: [{ code: 'ABOVE_PLAN_RATE', description: 'Billed above the plan rate.' }],
          },
          {
            lineNumber: 2,
            lineItemId: null,
            decision: 'denied',
            submitted: null,
            benefit: null,
            rejections: [{ code: 'NOT_COVERED', description: 'Code 0145 is not covered by the plan.' }],
            warnings: [],
          },
        ],
      },
    );
  });

  test('a claim not yet sent has no submittedAt', () => {
    assert.equal(claimOf(row('submitting', null), [], true).submittedAt, null);
  });
});
