// What the insurer's answer does, decided without a database (answerEffect in src/claims/answer.ts):
// nothing for a claim that no longer waits for this submission; else its items tied to the lines they
// claimed, its status with the answer's message and authorization, and a remittance unless rejected.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerEffect } from '../../src/claims/answer.ts';
import type { SubmitAnswer } from '../../src/insurer/port.ts';

const sent = {
  submissionId: 'sub_1',
  lines: [
    { lineNumber: 1, lineItemId: 'li_a' },
    { lineNumber: 2, lineItemId: 'li_b' },
  ],
} as Parameters<typeof answerEffect>[1];
const submitting = { status: 'submitting', submissionId: 'sub_1' };
const answer = (status: SubmitAnswer['status']): SubmitAnswer => ({
  status,
  message: status === 'rejected' ? 'Membership not active' : null,
  authorizationReference: status === 'rejected' ? null : 'AUTH-9',
  lines: [
    { lineNumber: 1, decision: 'approved', submitted: 1000, benefit: 800, rejections: [], warnings: [] },
    {
      lineNumber: 3,
      decision: 'denied',
      submitted: 500,
      benefit: null,
      rejections: [{ code: 'R1', description: 'Not covered' }],
      warnings: [],
    },
  ],
});

test('an answer to the submission the claim waits for records its items, status and remittance', () => {
  const effect = answerEffect(submitting, sent, answer('accepted'), true);
  assert.deepEqual(effect, {
    kind: 'record',
    items: [
      {
        line_number: 1,
        line_item_id: 'li_a',
        decision: 'approved',
        submitted: 1000,
        benefit: 800,
        rejections: [],
        warnings: [],
      },
      {
        line_number: 3,
        line_item_id: null,
        decision: 'denied',
        submitted: 500,
        benefit: null,
        rejections: [{ code: 'R1', description: 'Not covered' }],
        warnings: [],
      },
    ],
    status: 'accepted',
    fields: { message: null, authorization_reference: 'AUTH-9' },
    remittance: true,
  });
});

test('no remittance follows a rejection, nor where remittances do not run', () => {
  const rejected = answerEffect(submitting, sent, answer('rejected'), true);
  assert.equal(rejected.kind === 'record' && rejected.remittance, false);
  assert.deepEqual(rejected.kind === 'record' && rejected.fields, {
    message: 'Membership not active',
    authorization_reference: null,
  });
  const none = answerEffect(submitting, sent, answer('partially_accepted'), false);
  assert.equal(none.kind === 'record' && none.remittance, false);
});

test('a claim that no longer waits for this submission takes nothing from the answer', () => {
  for (const claim of [
    undefined,
    { status: 'accepted', submissionId: 'sub_1' },
    { status: 'submitting', submissionId: 'sub_2' },
  ]) {
    assert.deepEqual(answerEffect(claim, sent, answer('accepted'), true), { kind: 'stale' });
  }
});
