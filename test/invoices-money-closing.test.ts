// What a closed invoice owes and what a medical scheme's money does: a cancelled, entered-in-error or
// written-off invoice owes nothing (balanceDue 0, in the updatedSince feed too) and a write-off's amount
// stays readable (amountWrittenOff); the patient's share left by an accepted claim (a shortfall, or a
// line not covered) is written off while the claim stays accepted and its payment stays; and a scheme's
// remittance after the patient paid at the desk is recorded in full, the surplus shown as creditDue
// and settled by a refund.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { refusedWith } from './billing-fixtures.ts';
import {
  assertBusinessRule,
  claimAndDrain,
  ESSENTIAL,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  lineRequest,
  newWorld,
  payments,
  readClaim,
  sendClaim,
  W19_SECOND_LINE,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

describeEachBackend('invoice money: closed invoices and the scheme share', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    // The scheme's remittance comes 30 s after its acceptance, so a test can pay at the desk first.
    svc = await startService(backend, { env: { REMITTANCE_DELAY_MS: '30000' } });
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const pay = (invoiceId: string, amount: number) =>
    svc.admin('POST', `/practices/${w.practiceId}/payments`, { invoiceId, amount, method: 'card' });
  const writeOff = (invoiceId: string, reason = 'Patient cannot pay') =>
    svc.admin('POST', `/practices/${w.practiceId}/invoices/${invoiceId}/write-off`, { reason });
  const refund = (invoiceId: string, amount: number) =>
    w.api('POST', `/invoices/${invoiceId}/refunds`, {
      body: { amount, method: 'card', reason: 'The scheme paid its share' },
      idempotencyKey: uniqueKey(),
    });
  /** Lets the sandbox insurer's remittance, due after its delay, be paid. */
  const remit = async () => {
    svc.clock.advance(30_000);
    await svc.worker.drain();
  };
  /** An issued invoice for one 0190 line priced `price` by the practice (above the plan's rate). */
  const pricedInvoice = async (price: number) => {
    const { invoiceId } = await issuedInvoice(w, { procedures: [{ code: '0190', dx: ['J06.9'] }] });
    await invoiceAction(w, invoiceId, 'amend');
    const line = (await getInvoice(w, invoiceId)).lineItems[0];
    const replaced = await w.api('PUT', `/invoices/${invoiceId}/line-items/${line.id}`, {
      body: lineRequest({ unitPrice: price, pricingSource: null, serviceDate: line.serviceDate }),
    });
    assert.equal(replaced.status, 200, replaced.text);
    return { invoiceId, invoice: await invoiceAction(w, invoiceId, 'issue') };
  };

  test('cancelled and entered-in-error invoices owe nothing, in the read and in the updatedSince feed', async () => {
    const since = new Date(svc.clock.now().getTime() - 1000).toISOString();
    const cancelled = await issuedInvoice(w);
    const answer = await w.api('POST', `/invoices/${cancelled.invoiceId}/cancel`, {
      body: { reason: 'Billed twice' },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.status, 'cancelled');
    assert.ok(cancelled.invoice.balanceDue > 0);
    assert.equal(answer.body.balanceDue, 0);
    assert.equal(answer.body.amountWrittenOff, 0);
    assert.equal(answer.body.totalGross, cancelled.invoice.totalGross, 'what it was for stays readable');

    const inError = await issuedInvoice(w);
    const marked = await svc.admin(
      'POST',
      `/practices/${w.practiceId}/invoices/${inError.invoiceId}/entered-in-error`,
      { reason: 'Wrong patient' },
    );
    assert.equal(marked.status, 200, marked.text);
    assert.equal(marked.body.balanceDue, 0);
    assert.equal((await getInvoice(w, inError.invoiceId)).balanceDue, 0);

    const feed = await w.api('GET', `/invoices?updatedSince=${encodeURIComponent(since)}&limit=100`);
    assert.equal(feed.status, 200, feed.text);
    const owed = Object.fromEntries(
      feed.body.data.map((i: { id: string; balanceDue: number }) => [i.id, i.balanceDue]),
    );
    assert.equal(owed[cancelled.invoiceId], 0);
    assert.equal(owed[inError.invoiceId], 0);
  });

  test('a written-off invoice owes nothing and says what was written off', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { coverage: null });
    assert.equal((await pay(invoiceId, 500)).status, 201);
    const written = await writeOff(invoiceId);
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.status, 'written_off');
    assert.equal(written.body.amountPaid, 500);
    assert.equal(written.body.balanceDue, 0);
    assert.equal(written.body.amountWrittenOff, invoice.totalGross - 500);
    assert.equal((await getInvoice(w, invoiceId)).amountWrittenOff, invoice.totalGross - 500);
    refusedWith(await pay(invoiceId, 1), 422, 'business_rule');
  });

  test("a shortfall left by an accepted claim is written off; the claim stays accepted and the scheme's payment stays", async () => {
    const { invoiceId, invoice } = await pricedInvoice(60_000);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    await remit();
    const remitted = await getInvoice(w, invoiceId);
    assert.equal(remitted.amountPaid, ESSENTIAL.rate0190);
    assert.equal(remitted.balanceDue, invoice.totalGross - ESSENTIAL.rate0190);

    const written = await writeOff(invoiceId, 'Gap not collectable');
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.status, 'written_off');
    assert.equal(written.body.balanceDue, 0);
    assert.equal(written.body.amountWrittenOff, invoice.totalGross - ESSENTIAL.rate0190);
    assert.equal(written.body.amountPaid, ESSENTIAL.rate0190);
    assert.equal(written.body.claimStatus, 'accepted');
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    assert.deepEqual(
      (await payments(w, invoiceId)).map((p) => [p.source, p.amount]),
      [['insurer', ESSENTIAL.rate0190]],
    );
  });

  test('the uncovered line of a partially accepted claim is written off without reversing the claim', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { procedures: W19_SECOND_LINE });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'partially_accepted');
    await remit();
    const paid = invoice.lineItems[0].total;
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, paid);
    const written = await writeOff(invoiceId);
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.amountWrittenOff, invoice.totalGross - paid);
    assert.equal(written.body.claimStatus, 'partially_accepted');
    assert.deepEqual(
      (await payments(w, invoiceId)).map((p) => [p.source, p.amount]),
      [['insurer', paid]],
    );
  });

  test("an accepted claim not yet remitted: the write-off is lowered by the scheme's payment when it comes", async () => {
    const { invoiceId, invoice } = await pricedInvoice(60_000);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    const written = await writeOff(invoiceId);
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.amountWrittenOff, invoice.totalGross);
    await remit();
    const after = await getInvoice(w, invoiceId);
    assert.equal(after.status, 'written_off');
    assert.equal(after.amountPaid, ESSENTIAL.rate0190, "the scheme's payment is recorded");
    assert.equal(after.amountWrittenOff, invoice.totalGross - ESSENTIAL.rate0190);
    assert.equal(after.balanceDue, 0);
  });

  test('a write-off waits while the claim is with the insurer', async () => {
    const { invoiceId } = await issuedInvoice(w);
    await sendClaim(w, invoiceId, 'claim');
    assertBusinessRule(await writeOff(invoiceId), /submitting; wait for the insurer's answer/);
    await svc.worker.drain();
  });

  test("the scheme's payment after the patient paid in full is recorded in full; the surplus is a credit settled by a refund", async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { procedures: [{ code: '0190', dx: ['J06.9'] }] });
    assert.equal(invoice.totalGross, ESSENTIAL.rate0190);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    assert.equal((await pay(invoiceId, invoice.totalGross)).status, 201, 'paid at the desk first');
    await remit();
    const credited = await getInvoice(w, invoiceId);
    assert.deepEqual(
      (await payments(w, invoiceId)).map((p) => [p.source, p.amount]),
      [
        ['patient', invoice.totalGross],
        ['insurer', ESSENTIAL.rate0190],
      ],
    );
    assert.equal(credited.status, 'balanced');
    assert.equal(credited.amountPaid, invoice.totalGross + ESSENTIAL.rate0190);
    assert.equal(credited.balanceDue, 0);
    assert.equal(credited.creditDue, ESSENTIAL.rate0190);

    const refunded = await refund(invoiceId, credited.creditDue);
    assert.equal(refunded.status, 201, refunded.text);
    const settled = await getInvoice(w, invoiceId);
    assert.equal(settled.creditDue, 0);
    assert.equal(settled.balanceDue, 0);
    assert.equal(settled.status, 'balanced');
    assert.equal(
      settled.amountPaid,
      invoice.totalGross,
      'the scheme paid the invoice; the patient got theirs back',
    );
    assert.equal(settled.claimStatus, 'accepted');
  });

  test("a partial desk payment before the remittance: the scheme's approved amount is recorded, the rest is the patient's credit", async () => {
    const { invoiceId, invoice } = await pricedInvoice(60_000);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    assert.equal((await pay(invoiceId, 20_000)).status, 201);
    await remit();
    const after = await getInvoice(w, invoiceId);
    const received = 20_000 + ESSENTIAL.rate0190;
    assert.equal(after.amountPaid, received);
    assert.equal(after.creditDue, received - invoice.totalGross);
    assert.equal(after.balanceDue, 0);
    const tooMuch = await refund(invoiceId, 20_001);
    refusedWith(tooMuch, 422, 'validation_failed', ['amount']);
    assert.equal((await refund(invoiceId, after.creditDue)).status, 201);
    const settled = await getInvoice(w, invoiceId);
    assert.equal(settled.amountPaid, invoice.totalGross);
    assert.equal(settled.creditDue, 0);
    assert.equal(settled.status, 'balanced');
  });
});
