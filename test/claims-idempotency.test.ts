// An Idempotency-Key sent with the actions that are not creations (claim, resubmit, reverse, cancel) is
// honoured: a retry with the same key and body replays the first answer without acting twice, a key
// reused for another request is refused, and two requests with one key sent together act once (the
// other answers 409 conflict with Retry-After, or replays). The key stays optional on them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  claimAndDrain,
  eventCount,
  issuedInvoice,
  jobsOfClaim,
  newWorld,
  readClaim,
  type World,
} from './claims-fixtures.ts';
import { type Answer, describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';
import { refusedWith } from './support/refusals.ts';

interface Action {
  name: string;
  /** An invoice ready for the action. */
  ready: (w: World) => Promise<string>;
  path: (invoiceId: string) => string;
  body: Record<string, unknown>;
  /** Another body the action accepts. */
  other: Record<string, unknown>;
  status: number;
  /** What the action adds to each time it takes effect on the invoice (jobs, events). */
  effects: (w: World, invoiceId: string) => Promise<number>;
}

async function claimJobs(w: World, invoiceId: string): Promise<number> {
  const claim = await readClaim(w, invoiceId).catch(() => undefined);
  return claim ? (await jobsOfClaim(w.svc, claim.id)).length : 0;
}

const ACTIONS: Action[] = [
  {
    name: 'claim',
    ready: async (w) => (await issuedInvoice(w)).invoiceId,
    path: (id) => `/invoices/${id}/claim`,
    body: {},
    other: { placeOfServiceCode: '22' },
    status: 202,
    effects: claimJobs,
  },
  {
    name: 'resubmit',
    ready: async (w) => {
      const { invoiceId } = await issuedInvoice(w, { procedures: [{ code: '0190', dx: ['W19.9'] }] });
      assert.equal((await claimAndDrain(w, invoiceId)).status, 'rejected');
      return invoiceId;
    },
    path: (id) => `/invoices/${id}/claim/resubmit`,
    body: {},
    other: { placeOfServiceCode: '22' },
    status: 202,
    effects: claimJobs,
  },
  {
    name: 'reverse',
    ready: async (w) => {
      const { invoiceId } = await issuedInvoice(w);
      assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
      return invoiceId;
    },
    path: (id) => `/invoices/${id}/claim/reverse`,
    body: { reason: 'billed the wrong visit' },
    other: { reason: 'another reason' },
    status: 202,
    effects: claimJobs,
  },
  {
    name: 'cancel',
    ready: async (w) => (await issuedInvoice(w)).invoiceId,
    path: (id) => `/invoices/${id}/cancel`,
    body: { reason: 'billed by mistake' },
    other: { reason: 'another reason' },
    status: 200,
    effects: (w, id) => eventCount(w.svc, id, 'invoice.cancelled'),
  },
];

describeEachBackend('Idempotency-Key on claim, resubmit, reverse and cancel', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const send = (action: Action, invoiceId: string, key: string | undefined, body = action.body) =>
    w.api('POST', action.path(invoiceId), { body, ...(key ? { idempotencyKey: key } : {}) });

  for (const action of ACTIONS) {
    test(`${action.name}: a retry with the same key replays the first answer and acts once`, async () => {
      const invoiceId = await action.ready(w);
      const already = await action.effects(w, invoiceId);
      const key = uniqueKey();
      const first = await send(action, invoiceId, key);
      assert.equal(first.status, action.status, first.text);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const retry = await send(action, invoiceId, key);
      assert.equal(retry.status, action.status, retry.text);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(retry.body, first.body);
      assert.equal(await action.effects(w, invoiceId), already + 1);
      // The same key for another request is refused.
      const other = await send(action, invoiceId, key, action.other);
      refusedWith(other, 422, 'idempotency_key_reused');
    });

    test(`${action.name}: two requests sent together with one key act once`, async () => {
      const invoiceId = await action.ready(w);
      const already = await action.effects(w, invoiceId);
      const key = uniqueKey();
      const answers: Answer[] = await Promise.all([
        send(action, invoiceId, key),
        send(action, invoiceId, key),
      ]);
      for (const answer of answers) {
        if (answer.status === 409) {
          refusedWith(answer, 409, 'conflict');
          assert.equal(answer.headers.get('retry-after'), '1');
        } else assert.equal(answer.status, action.status, answer.text);
      }
      assert.ok(
        answers.some((a) => a.status === action.status && a.headers.get('idempotent-replayed') === null),
        'one of them ran',
      );
      assert.equal(await action.effects(w, invoiceId), already + 1);
      const retry = await send(action, invoiceId, key);
      assert.equal(retry.status, action.status, retry.text);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    });
  }

  test('the key stays optional: a claim without one is sent', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const answer = await send(ACTIONS[0]!, invoiceId, undefined);
    assert.equal(answer.status, 202, answer.text);
  });
});
