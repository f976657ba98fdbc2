// What a remittance does, decided without a database (decideRemittance in src/claims/remittance.ts):
// the insurer's approved benefit paid in full net of what it already paid (never capped at the balance:
// beyond it is the patient's credit), on an invoice paid in full or written off too; waiting while a
// reversal is under way or the invoice is being amended; nothing for another submission, a claim the
// insurer does not stand by, nothing left to pay, or an invoice no remittance is recorded on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideRemittance, type RemittanceFacts } from '../../src/claims/remittance.ts';

const facts = (
  claim: Partial<NonNullable<RemittanceFacts['claim']>> = {},
  invoice: Partial<NonNullable<RemittanceFacts['invoice']>> = {},
): RemittanceFacts => ({
  submissionId: 'sub_1',
  claim: { submissionId: 'sub_1', status: 'accepted', approvedBenefit: 50_000, ...claim },
  invoice: { status: 'issued', insurerPaid: 0, ...invoice },
});

test('an accepted claim pays its approved benefit in full, net of what the insurer already paid', () => {
  assert.deepEqual(decideRemittance(facts()), { kind: 'pay', amount: 50_000 });
  assert.deepEqual(decideRemittance(facts({}, { insurerPaid: 20_000 })), { kind: 'pay', amount: 30_000 });
  // Whatever the patient paid first: the scheme's money is never turned away.
  for (const status of ['partially_paid', 'overdue', 'balanced', 'written_off']) {
    assert.deepEqual(decideRemittance(facts({}, { status })), { kind: 'pay', amount: 50_000 }, status);
  }
  for (const status of ['partially_accepted', 'reversal_failed']) {
    assert.deepEqual(decideRemittance(facts({ status })), { kind: 'pay', amount: 50_000 }, status);
  }
});

test('a reversal under way, or an invoice being amended, makes the remittance wait', () => {
  assert.deepEqual(decideRemittance(facts({ status: 'reversing' })), {
    kind: 'wait',
    reason: 'the claim is being reversed',
  });
  for (const status of ['amending', 'draft']) {
    assert.deepEqual(
      decideRemittance(facts({}, { status })),
      { kind: 'wait', reason: 'invoice is being amended' },
      status,
    );
  }
});

test('nothing for another submission, a claim not stood by, nothing left to pay, or an invoice no remittance is recorded on', () => {
  const nothing = { kind: 'nothing' };
  assert.deepEqual(decideRemittance(facts({ submissionId: 'sub_2' })), nothing);
  assert.deepEqual(decideRemittance(facts({ submissionId: 'sub_2', status: 'reversing' })), nothing);
  for (const status of ['rejected', 'reversed', 'submitted']) {
    assert.deepEqual(decideRemittance(facts({ status })), nothing, status);
  }
  assert.deepEqual(decideRemittance(facts({}, { insurerPaid: 50_000 })), nothing, 'paid already');
  assert.deepEqual(decideRemittance(facts({}, { insurerPaid: 50_000, status: 'amending' })), nothing);
  assert.deepEqual(decideRemittance(facts({}, { status: 'cancelled' })), nothing);
  assert.deepEqual(decideRemittance({ submissionId: 'sub_1' }), nothing, 'no claim or invoice found');
});
