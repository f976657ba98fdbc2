// An invoice's status follows from its money in every order of events: payments then a re-issue, a
// line change under a payment, the overdue job on paid invoices, a claim reversed after the insurer
// paid; and the closing states: cancel (public), entered in error and write-off (operator), each with
// its audit row and event, a cancelled invoice's visit billable again.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { markOverdueInvoices } from '../src/invoices/overdue.ts';
import { DAY, refusedWith } from './billing-fixtures.ts';
import {
  assertBusinessRule,
  billVisit,
  claimAndDrain,
  eventCount,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  lineRequest,
  newPatient,
  newWorld,
  payments,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('invoice money states', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const pay = (invoiceId: string, amount: number) =>
    svc.admin('POST', `/practices/${w.practiceId}/payments`, { invoiceId, amount, method: 'card' });
  const auditActions = async (invoiceId: string) =>
    (await svc.admin('GET', `/practices/${w.practiceId}/audit-events?limit=100`)).body.data.filter(
      (e: { resourceId: string | null }) => e.resourceId === invoiceId,
    );

  test('a partly paid invoice amended down to what was paid is balanced when issued again, and refuses more payments', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const first = invoice.lineItems[0];
    assert.equal((await pay(invoiceId, first.total)).status, 201);
    assert.equal((await invoiceAction(w, invoiceId, 'amend')).status, 'amending');
    const deleted = await w.api('DELETE', `/invoices/${invoiceId}/line-items/${invoice.lineItems[1].id}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.body.balanceDue, 0);
    const reissued = await invoiceAction(w, invoiceId, 'issue');
    assert.equal(reissued.status, 'balanced');
    assert.equal(reissued.amountPaid, first.total);
    refusedWith(await pay(invoiceId, 1), 422, 'business_rule');
  });

  test('a partly paid invoice issued again stays partially_paid; a line added is owed on top', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    assert.equal((await pay(invoiceId, 1000)).status, 201);
    await invoiceAction(w, invoiceId, 'amend');
    const added = await w.api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineRequest({ code: '0192', unitPrice: 5000 }),
      idempotencyKey: `line-${invoiceId}`,
    });
    assert.equal(added.status, 201, added.text);
    const reissued = await invoiceAction(w, invoiceId, 'issue');
    assert.equal(reissued.status, 'partially_paid');
    assert.equal(reissued.balanceDue, invoice.totalGross + 5000 - 1000);
  });

  test('an unpaid amended invoice issued again after its due date is overdue at once', async () => {
    const { invoiceId } = await issuedInvoice(w);
    await invoiceAction(w, invoiceId, 'amend');
    svc.clock.advance(40 * DAY);
    try {
      assert.equal((await invoiceAction(w, invoiceId, 'issue')).status, 'overdue');
    } finally {
      svc.clock.offsetMs = 0;
    }
  });

  test('a line change that would bring the total below what was paid is refused; the balance never goes negative', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const paid = invoice.lineItems[0].total + 1;
    assert.equal((await pay(invoiceId, paid)).status, 201);
    await invoiceAction(w, invoiceId, 'amend');
    const second = invoice.lineItems[1];
    const deleted = await w.api('DELETE', `/invoices/${invoiceId}/line-items/${second.id}`);
    assertBusinessRule(deleted, /below what was paid/);
    const cheaper = await w.api('PUT', `/invoices/${invoiceId}/line-items/${second.id}`, {
      body: lineRequest({ code: second.code, serviceDate: second.serviceDate, unitPrice: 0 }),
    });
    assertBusinessRule(cheaper, /below what was paid/);
    const now = await getInvoice(w, invoiceId);
    assert.equal(now.lineItems.length, 2, 'the refused change left the lines as they were');
    assert.equal(now.totalGross, invoice.totalGross);
    assert.equal(now.balanceDue, invoice.totalGross - paid);
    // down to exactly what was paid is allowed, and the invoice is then balanced once issued
    const exact = await w.api('PUT', `/invoices/${invoiceId}/line-items/${second.id}`, {
      body: lineRequest({ code: second.code, serviceDate: second.serviceDate, unitPrice: 1 }),
    });
    assert.equal(exact.status, 200, exact.text);
    assert.equal(exact.body.balanceDue, 0);
    assert.equal((await invoiceAction(w, invoiceId, 'issue')).status, 'balanced');
  });

  test('the overdue job leaves paid and partly paid invoices as they are', async () => {
    const unpaid = await issuedInvoice(w);
    const partly = await issuedInvoice(w);
    const paid = await issuedInvoice(w);
    assert.equal((await pay(partly.invoiceId, 100)).status, 201);
    assert.equal((await pay(paid.invoiceId, paid.invoice.totalGross)).status, 201);
    const later = new Date(svc.clock.now().getTime() + 60 * DAY);
    while ((await markOverdueInvoices(svc.db, later)) > 0) {}
    const statuses = await Promise.all(
      [unpaid, partly, paid].map(async (i) => (await getInvoice(w, i.invoiceId)).status),
    );
    assert.deepEqual(statuses, ['overdue', 'partially_paid', 'balanced']);
    // paying an overdue invoice in full balances it
    assert.equal((await pay(unpaid.invoiceId, unpaid.invoice.totalGross)).status, 201);
    assert.equal((await getInvoice(w, unpaid.invoiceId)).status, 'balanced');
  });

  test('a claim paid by the insurer and then reversed: the payment is taken back and the claim can be resubmitted', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const accepted = await claimAndDrain(w, invoiceId);
    assert.equal(accepted.status, 'accepted');
    const balanced = await getInvoice(w, invoiceId);
    assert.equal(balanced.status, 'balanced');
    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    const reversed = await readClaim(w, invoiceId);
    assert.equal(reversed.status, 'reversed');
    assert.equal(reversed.resubmittable, true);
    const owed = await getInvoice(w, invoiceId);
    assert.equal(owed.status, 'issued');
    assert.equal(owed.amountPaid, 0);
    assert.equal(owed.balanceDue, invoice.totalGross);
    assert.deepEqual(
      (await payments(w, invoiceId)).map((p) => [p.source, p.amount]),
      [
        ['insurer', invoice.totalGross],
        ['insurer', -invoice.totalGross],
      ],
    );
    assert.equal(await eventCount(svc, invoiceId, 'payment.created'), 2);
    const resubmitted = await sendClaim(w, invoiceId, 'claim/resubmit');
    assert.equal(resubmitted.status, 'submitting');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    const settled = await getInvoice(w, invoiceId);
    assert.equal(settled.status, 'balanced');
    assert.equal(settled.amountPaid, invoice.totalGross);
  });

  test('a rejected claim on an invoice the patient then paid in full is not resubmittable', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { coverage: { memberNumber: 'REJECT-1' } });
    const rejected = await claimAndDrain(w, invoiceId);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.resubmittable, true);
    assert.equal((await pay(invoiceId, invoice.totalGross)).status, 201);
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.resubmittable, false);
    assertBusinessRule(await w.api('POST', `/invoices/${invoiceId}/claim/resubmit`), /balanced/);
  });

  test('cancel: a draft or an unpaid issued invoice is cancelled with its reason, audited, announced, and its visit can be billed again', async () => {
    const { patientId } = await newPatient(w);
    const billed = await billVisit(w, patientId, undefined, {});
    const invoice = billed.body.invoice;
    const encounterId = invoice.encounterIds[0];
    const again = await w.api('POST', `/encounters/${encounterId}/bill`, {
      idempotencyKey: `again-${encounterId}`,
    });
    refusedWith(again, 409, 'duplicate');

    refusedWith(
      await w.api('POST', `/invoices/${invoice.id}/cancel`, { body: {} }),
      422,
      'validation_failed',
      ['reason'],
    );
    const cancelled = await w.api('POST', `/invoices/${invoice.id}/cancel`, {
      body: { reason: 'Billed to the wrong patient' },
    });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.deepEqual(cancelled.body.encounterIds, [encounterId]);
    assert.equal(await eventCount(svc, invoice.id, 'invoice.cancelled'), 1);
    const audited = await auditActions(invoice.id);
    assert.ok(
      audited.some((e: { route: string; status: number }) => /cancel/.test(e.route) && e.status === 200),
      JSON.stringify(audited),
    );

    for (const action of ['issue', 'amend']) {
      assertBusinessRule(await w.api('POST', `/invoices/${invoice.id}/${action}`), /cancelled/);
    }
    refusedWith(await pay(invoice.id, 100), 422, 'business_rule');
    assertBusinessRule(
      await w.api('POST', `/invoices/${invoice.id}/cancel`, { body: { reason: 'twice' } }),
      /cancelled/,
    );

    const rebilled = await w.api('POST', `/encounters/${encounterId}/bill`, {
      body: { issue: true },
      idempotencyKey: `rebill-${encounterId}`,
    });
    assert.equal(rebilled.status, 201, rebilled.text);
    assert.notEqual(rebilled.body.invoice.id, invoice.id);
    assert.equal(rebilled.body.invoice.status, 'issued');

    const issued = await issuedInvoice(w);
    const cancelIssued = await w.api('POST', `/invoices/${issued.invoiceId}/cancel`, {
      body: { reason: 'Duplicate' },
    });
    assert.equal(cancelIssued.body.status, 'cancelled', cancelIssued.text);
  });

  test('cancel is refused with a reason to act on: payments, an accepted claim, a claim in flight; another practice answers 404', async () => {
    const paid = await issuedInvoice(w);
    assert.equal((await pay(paid.invoiceId, 100)).status, 201);
    assertBusinessRule(
      await w.api('POST', `/invoices/${paid.invoiceId}/cancel`, { body: { reason: 'x' } }),
      /partially_paid.*can be cancelled.*write its balance off/,
    );

    const claimed = await issuedInvoice(w);
    await sendClaim(w, claimed.invoiceId, 'claim');
    assertBusinessRule(
      await w.api('POST', `/invoices/${claimed.invoiceId}/cancel`, { body: { reason: 'x' } }),
      /submitting.*wait/,
    );
    await svc.worker.drain();
    // accepted and paid by the insurer: the claim comes first in the refusal (reversing it takes the
    // insurer's money back too)
    const refused = await w.api('POST', `/invoices/${claimed.invoiceId}/cancel`, { body: { reason: 'x' } });
    assertBusinessRule(refused, /has a claim that is accepted; reverse it first/);
    assert.equal((await getInvoice(w, claimed.invoiceId)).status, 'balanced');

    const other = await newWorld(svc);
    refusedWith(
      await other.api('POST', `/invoices/${claimed.invoiceId}/cancel`, { body: { reason: 'x' } }),
      404,
      'not_found',
    );
  });

  test('operator write-off closes a partly paid invoice, keeps its payments and its visit billed', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    assert.equal((await pay(invoiceId, 500)).status, 201);
    const base = `/practices/${w.practiceId}/invoices/${invoiceId}`;
    refusedWith(await svc.admin('POST', `${base}/write-off`, {}), 422, 'validation_failed', ['reason']);
    const written = await svc.admin('POST', `${base}/write-off`, { reason: 'Patient emigrated' });
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.status, 'written_off');
    assert.equal(written.body.amountPaid, 500);
    assert.equal(written.body.balanceDue, 0);
    assert.equal(written.body.amountWrittenOff, invoice.totalGross - 500);
    assert.equal(await eventCount(svc, invoiceId, 'invoice.written_off'), 1);
    refusedWith(await pay(invoiceId, 1), 422, 'business_rule');
    const rebill = await w.api('POST', `/encounters/${invoice.encounterIds[0]}/bill`, {
      idempotencyKey: `wo-${invoiceId}`,
    });
    refusedWith(rebill, 409, 'duplicate');
    assertBusinessRule(await svc.admin('POST', `${base}/write-off`, { reason: 'again' }), /written_off/);

    const draft = (await billVisit(w, (await newPatient(w)).patientId, undefined, {})).body.invoice;
    assertBusinessRule(
      await svc.admin('POST', `/practices/${w.practiceId}/invoices/${draft.id}/write-off`, { reason: 'x' }),
      /draft/,
    );
    const ops = await svc.admin('GET', `/practices/${w.practiceId}/audit-events?limit=100`);
    assert.ok(
      ops.body.data.some(
        (e: { resourceId: string; route: string }) => e.resourceId === invoiceId && /write-off/.test(e.route),
      ),
      'the write-off is in the practice audit log',
    );
  });

  test('operator entered-in-error releases the visit like a cancel, and is refused once paid', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const marked = await svc.admin(
      'POST',
      `/practices/${w.practiceId}/invoices/${invoiceId}/entered-in-error`,
      {
        reason: 'Wrong patient',
      },
    );
    assert.equal(marked.status, 200, marked.text);
    assert.equal(marked.body.status, 'entered_in_error');
    assert.equal(await eventCount(svc, invoiceId, 'invoice.entered_in_error'), 1);
    const rebilled = await w.api('POST', `/encounters/${invoice.encounterIds[0]}/bill`, {
      idempotencyKey: `eie-${invoiceId}`,
    });
    assert.equal(rebilled.status, 201, rebilled.text);

    const paid = await issuedInvoice(w);
    assert.equal((await pay(paid.invoiceId, 100)).status, 201);
    assertBusinessRule(
      await svc.admin('POST', `/practices/${w.practiceId}/invoices/${paid.invoiceId}/entered-in-error`, {
        reason: 'x',
      }),
      /partially_paid.*entered in error/,
    );
    refusedWith(
      await svc.admin('POST', `/practices/${w.practiceId}/invoices/inv_madeup000000000000/entered-in-error`, {
        reason: 'x',
      }),
      404,
      'not_found',
    );
  });
});
