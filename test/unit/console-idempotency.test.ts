// The console's Idempotency-Keys (console/src/api.ts) without a browser: one key per action, kept for
// the operator's retry of the same request and renewed after a success, a final refusal or for
// another request; and an action whose answer is lost, or told the first attempt still runs, is
// retried under its key.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { ActionKey, AdminApi, ApiError } from '../../console/src/api.ts';

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** Replaces fetch with answers given in turn (an Error is thrown as a lost answer); records the keys sent. */
function scriptedFetch(answers: Array<Response | Error>): Array<string | undefined> {
  const keys: Array<string | undefined> = [];
  globalThis.fetch = async (_url, init) => {
    keys.push((init?.headers as Record<string, string> | undefined)?.['idempotency-key']);
    const next = answers.shift();
    if (!next) throw new Error('no answer scripted');
    if (next instanceof Error) throw next;
    return next;
  };
  return keys;
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

test('a form action keeps its key for the same request until it succeeds', () => {
  const action = new ActionKey();
  const payment = { invoiceId: 'inv_1', amount: 100, method: 'eft' };
  const first = action.for(payment);
  assert.match(first, /^console_[0-9a-f]{32}$/);
  assert.equal(action.for({ ...payment }), first, 'submitted again after a failure: the same key');
  const other = action.for({ ...payment, amount: 200 });
  assert.notEqual(other, first, 'another payment: another key');
  action.done();
  assert.notEqual(action.for({ ...payment, amount: 200 }), other, 'after a success: a new action');
});

test('an action whose answer is lost, or still running, is retried under the same key', async () => {
  const keys = scriptedFetch([
    new TypeError('network error'),
    json(409, { code: 'conflict', detail: 'still running' }),
    json(201, { id: 'pay_1' }),
  ]);
  const api = new AdminApi('token');
  const answer = await api.recordPayment(
    'org_1',
    { invoiceId: 'inv_1', amount: 100, method: 'eft', source: 'patient' },
    'console_given',
  );
  assert.deepEqual(answer, { id: 'pay_1' });
  assert.deepEqual(keys, ['console_given', 'console_given', 'console_given']);
});

test('every action carries a key of its own; a refusal is not retried; a read carries none', async () => {
  const keys = scriptedFetch([
    json(201, { id: 'key_1' }),
    json(201, { id: 'key_2' }),
    json(422, { code: 'business_rule', detail: 'no' }),
    json(200, { data: [] }),
  ]);
  const api = new AdminApi('token');
  await api.issueKey('cli_1');
  await api.issueKey('cli_1');
  await assert.rejects(api.revokeKey('key_1'), /no/);
  await api.listPractices();
  assert.equal(keys.length, 4);
  assert.notEqual(keys[0], keys[1]);
  assert.match(keys[2] ?? '', /^console_/);
  assert.equal(keys[3], undefined);
});

test('a final refusal ends the action: the same request, its cause fixed, gets a new key', async () => {
  const payment = { invoiceId: 'inv_1', amount: 100, method: 'eft', source: 'patient' };
  const keys = scriptedFetch([
    json(422, { code: 'business_rule', detail: 'The invoice is not issued.' }),
    json(201, { id: 'pay_1' }),
  ]);
  const api = new AdminApi('token');
  const action = new ActionKey();
  // As the payment form submits: the key is given up on a final refusal, else kept.
  const submit = async () => {
    try {
      return await api.recordPayment('org_1', payment, action.for(payment));
    } catch (error) {
      action.failed(error);
      throw error;
    }
  };
  await assert.rejects(submit(), (error: unknown) => error instanceof ApiError && error.status === 422);
  assert.deepEqual(await submit(), { id: 'pay_1' });
  assert.equal(keys.length, 2);
  assert.notEqual(keys[1], keys[0], 'not the refused key, whose stored 422 would be replayed');
});

test('a failure that may hide an act keeps the key; every other 4xx gives it up', () => {
  const payment = { invoiceId: 'inv_1', amount: 100, method: 'eft' };
  const kept = [
    new TypeError('network error'),
    new ApiError(409, 'still running', 'conflict'),
    new ApiError(408, 'timeout', 'request_timeout'),
    new ApiError(429, 'slow down', 'rate_limited'),
    new ApiError(500, 'failure', 'internal_error'),
    new ApiError(503, 'unavailable', 'service_unavailable'),
  ];
  for (const error of kept) {
    const action = new ActionKey();
    const key = action.for(payment);
    action.failed(error);
    assert.equal(action.for(payment), key, `kept after ${String(error)}`);
  }
  const ended = [
    new ApiError(422, 'not issued', 'business_rule'),
    new ApiError(422, 'too much', 'validation_failed'),
    new ApiError(409, 'exists', 'duplicate'),
    new ApiError(404, 'no such invoice', 'not_found'),
    new ApiError(400, 'bad', 'invalid_request'),
  ];
  for (const error of ended) {
    const action = new ActionKey();
    const key = action.for(payment);
    action.failed(error);
    assert.notEqual(action.for(payment), key, `a new key after ${error.status} ${error.code}`);
  }
});
