// Whether a claim is sent or sent again, decided without a database (decideSend and
// decideResubmission in src/claims/sending.ts): an invoice's first claim only when it has none (the
// refusal says what to do with the one it has), a resubmission only of a rejected, reversed or
// partially accepted claim (the last reversed first), and both only when the claim rule lets the invoice
// be claimed under the coverage found.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ClaimFacts, decideResubmission, decideSend } from '../../src/claims/sending.ts';
import type { CoverageRow } from '../../src/insurance/service.ts';

const COVERAGE = { id: 'cov_2', plan_id: 'plan_1' } as CoverageRow;

const facts = (claim: { status: string; id?: string } | undefined, over: Partial<ClaimFacts> = {}) => ({
  invoice: {
    number: 'INV-000009',
    status: 'issued',
    lines: [{ code: '0190', diagnoses: [{ primary: true }] }],
  },
  claim,
  coverage: { kind: 'found' as const, coverage: COVERAGE },
  ...over,
});

test('a first claim is sent under the coverage found when the invoice has none', () => {
  assert.deepEqual(decideSend(facts(undefined)), { claimable: true, coverage: COVERAGE });
});

test('a first claim is refused while the invoice has one, saying what to do with it', () => {
  const next: Record<string, string> = {
    submitting: 'wait for the insurer to answer',
    reversing: 'wait for the insurer to answer',
    accepted: 'reverse it, or resubmit',
    partially_accepted: 'reverse it, or resubmit',
    reversal_failed: 'reverse it, or resubmit',
    rejected: 'resubmit it',
    reversed: 'resubmit it',
  };
  for (const [status, what] of Object.entries(next)) {
    assert.deepEqual(
      decideSend(facts({ status })),
      {
        claimable: false,
        reason: `Invoice INV-000009 already has a claim that is ${status}; ${what}.`,
        field: null,
      },
      status,
    );
  }
});

test('a first claim follows the claim rule: the invoice, then the coverage', () => {
  const draft = decideSend(
    facts(undefined, { invoice: { number: 'INV-000009', status: 'draft', lines: [] } }),
  );
  assert.match(draft.claimable ? '' : draft.reason, /is draft; only an issued/);
  const stranger = decideSend(facts(undefined, { coverage: { kind: 'not_patients' } }));
  assert.equal(stranger.claimable === false && stranger.field, 'coverageId');
  const none = decideSend(facts(undefined, { coverage: { kind: 'none' } }));
  assert.match(none.claimable ? '' : none.reason, /no active coverage/);
});

test('a rejected or reversed claim is sent again; a partially accepted one is reversed first', () => {
  for (const status of ['rejected', 'reversed']) {
    const claim = { status, id: 'clm_1' };
    assert.deepEqual(
      decideResubmission(facts(claim)),
      { claimable: true, claim, coverage: COVERAGE, reverseFirst: false },
      status,
    );
  }
  const partial = { status: 'partially_accepted', id: 'clm_1' };
  assert.deepEqual(decideResubmission(facts(partial)), {
    claimable: true,
    claim: partial,
    coverage: COVERAGE,
    reverseFirst: true,
  });
});

test('no claim, or one in a status resubmit does not take, is refused before the claim rule is asked', () => {
  assert.deepEqual(decideResubmission(facts(undefined, { coverage: { kind: 'none' } })), {
    claimable: false,
    reason: 'Invoice INV-000009 has no claim yet; send it first.',
    field: null,
  });
  for (const status of ['submitting', 'accepted', 'reversing', 'reversal_failed']) {
    assert.deepEqual(
      decideResubmission(facts({ status }, { coverage: { kind: 'not_patients' } })),
      {
        claimable: false,
        reason: `The claim is ${status}; only a rejected, reversed or partially accepted claim can be resubmitted.`,
        field: null,
      },
      status,
    );
  }
});

test('a resubmission follows the claim rule as a first claim does', () => {
  const balanced = decideResubmission(
    facts(
      { status: 'partially_accepted' },
      { invoice: { number: 'INV-000009', status: 'balanced', lines: [] } },
    ),
  );
  assert.match(balanced.claimable ? '' : balanced.reason, /is balanced/);
  const stranger = decideResubmission(facts({ status: 'rejected' }, { coverage: { kind: 'not_patients' } }));
  assert.equal(stranger.claimable === false && stranger.field, 'coverageId');
});
