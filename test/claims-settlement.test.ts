// A claim and its invoice never disagree: an invoice whose claim the insurer accepted (in whole, in
// part, or whose reversal failed) cannot be amended until the claim is reversed, and is then claimed
// again from its new lines; and `resubmittable` says exactly whether resubmit is accepted, a partially
// accepted claim included.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  assertBusinessRule,
  assertStatusEvents,
  claimAndDrain,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  newWorld,
  readClaim,
  sendClaim,
  W19_SECOND_LINE,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('claims settled before their invoice changes', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const post = (invoiceId: string, operation: string) => w.api('POST', `/invoices/${invoiceId}/${operation}`);

  test('an accepted claim must be reversed before its invoice is amended; then the new lines are claimed', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    const before = await getInvoice(w, invoiceId);
    assert.equal(before.status, 'balanced');
    assertBusinessRule(
      await post(invoiceId, 'amend'),
      /has a claim that is accepted; reverse it first \(POST \/invoices\/\{invoiceId\}\/claim\/reverse\)/,
    );
    assert.deepEqual(await getInvoice(w, invoiceId), before, 'the refusal changed nothing');

    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'reversed');
    const amending = await invoiceAction(w, invoiceId, 'amend');
    assert.equal(amending.status, 'amending');
    const dropped = invoice.lineItems[1];
    assert.equal((await w.api('DELETE', `/invoices/${invoiceId}/line-items/${dropped.id}`)).status, 200);
    assert.equal((await invoiceAction(w, invoiceId, 'issue')).status, 'issued');
    await sendClaim(w, invoiceId, 'claim/resubmit');
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.deepEqual(
      claim.items.map((i: { lineItemId: string }) => i.lineItemId),
      [invoice.lineItems[0].id],
      'the claim names only the lines the invoice has',
    );
    const settled = await getInvoice(w, invoiceId);
    assert.deepEqual([settled.status, settled.amountPaid], ['balanced', invoice.lineItems[0].total]);
    // submitting, accepted, reversing, reversed, submitting, accepted
    await assertStatusEvents(svc, invoiceId, 6);
  });

  test('a partially accepted claim is resubmittable, and resubmit accepts it; amending waits for its reversal', async () => {
    const { invoiceId } = await issuedInvoice(w, { procedures: W19_SECOND_LINE });
    const partial = await claimAndDrain(w, invoiceId);
    assert.equal(partial.status, 'partially_accepted');
    assert.equal(partial.resubmittable, true);
    assert.equal((await getInvoice(w, invoiceId)).status, 'partially_paid');
    assertBusinessRule(await post(invoiceId, 'amend'), /claim that is partially_accepted; reverse it first/);

    const resent = await sendClaim(w, invoiceId, 'claim/resubmit');
    assert.equal(resent.status, 'reversing');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'partially_accepted');
  });

  test('a claim whose reversal failed still stands: not resubmittable, and the invoice cannot be amended', async () => {
    const { invoiceId } = await issuedInvoice(w, { coverage: { memberNumber: 'REVFAIL-77' } });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    const failed = await readClaim(w, invoiceId);
    assert.deepEqual([failed.status, failed.resubmittable], ['reversal_failed', false]);
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /reversal_failed/);
    assertBusinessRule(await post(invoiceId, 'amend'), /claim that is reversal_failed; reverse it first/);
  });
});
