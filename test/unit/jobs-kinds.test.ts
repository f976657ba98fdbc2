// The job catalogue without a database: every kind's payload is checked against its schema, a payload
// that does not fit is refused with the field that is wrong, and each kind has a name of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLAIM_JOBS } from '../../src/claims/job-kinds.ts';
import { checkedPayload, JobPayloadError } from '../../src/jobs/kind.ts';
import { DELIVER_JOB } from '../../src/webhooks/job-kinds.ts';

const KINDS = [...Object.values(CLAIM_JOBS), DELIVER_JOB];

test('each job kind has a name of its own', () => {
  const names = KINDS.map((k) => k.name);
  assert.deepEqual(names, [...new Set(names)]);
  assert.deepEqual(names.sort(), ['claim.reverse', 'claim.submit', 'insurer.remittance', 'webhook.deliver']);
});

test('payloads that fit their kind are answered as they are', () => {
  const submit = { claimId: 'clm_1', submissionId: 'sub_1' };
  assert.deepEqual(checkedPayload(CLAIM_JOBS.submit, submit), submit);
  const reverse = {
    claimId: 'clm_1',
    reversalId: 'sub_2',
    reason: null,
    resubmit: { coverageId: 'cov_1', placeOfServiceCode: null },
  };
  assert.deepEqual(checkedPayload(CLAIM_JOBS.reverse, reverse), reverse);
  assert.deepEqual(checkedPayload(CLAIM_JOBS.reverse, { claimId: 'clm_1', reversalId: 'sub_2' }), {
    claimId: 'clm_1',
    reversalId: 'sub_2',
  });
  assert.deepEqual(checkedPayload(DELIVER_JOB, { deliveryId: 'dlv_1' }), { deliveryId: 'dlv_1' });
});

test('a payload that does not fit is refused, naming the wrong field', () => {
  assert.throws(
    () => checkedPayload(CLAIM_JOBS.submit, { claimId: 'clm_1', submissionId: 7 }),
    (error: unknown) =>
      error instanceof JobPayloadError &&
      /claim\.submit/.test(error.message) &&
      /submissionId/.test(error.message),
  );
  assert.throws(() => checkedPayload(DELIVER_JOB, {}), JobPayloadError);
  assert.throws(
    () =>
      checkedPayload(CLAIM_JOBS.reverse, { claimId: 'clm_1', reversalId: 'r', resubmit: { coverageId: 1 } }),
    JobPayloadError,
  );
  assert.throws(() => checkedPayload(CLAIM_JOBS.remittance, null), JobPayloadError);
});
