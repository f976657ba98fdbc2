// What the claim operations refuse, and why: an invoice that is not claim-ready (422 business_rule
// naming what to fix), a claim in the wrong status for the operation, amending while a claim is in
// flight or accepted, a coverage of another patient (422 naming coverageId), and a claim that does not exist. Bill
// with issue and submitClaim queues the claim, or says why it did not and still makes the invoice.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TARIFF_URL } from './billing-fixtures.ts';
import {
  addCoverage,
  addLine,
  assertBusinessRule,
  assertStatusEvents,
  billVisit,
  claimAndDrain,
  claimRow,
  draftInvoice,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  lineRequest,
  newPatient,
  newWorld,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('claim refusals', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const post = (invoiceId: string, operation: string, body?: unknown) =>
    w.api('POST', `/invoices/${invoiceId}/${operation}`, body === undefined ? {} : { body });

  /** The refusal left no claim, no event and no queued job behind. */
  async function assertNothingSent(invoiceId: string) {
    assert.equal((await w.api('GET', `/invoices/${invoiceId}/claim`)).status, 404);
    assert.equal((await getInvoice(w, invoiceId)).claimStatus, null);
    await assertStatusEvents(svc, invoiceId, 0);
  }

  test('a draft invoice cannot be claimed: 422 business_rule saying it must be issued', async () => {
    const { invoiceId } = await draftInvoice(w);
    assertBusinessRule(await post(invoiceId, 'claim'), /is draft.*issued/);
    await assertNothingSent(invoiceId);
  });

  test('an invoice without lines cannot be issued, so it is never claimed', async () => {
    const { invoiceId, invoice } = await draftInvoice(w);
    for (const line of invoice.lineItems) {
      const removed = await w.api('DELETE', `/invoices/${invoiceId}/line-items/${line.id}`);
      assert.equal(removed.status, 200, removed.text);
    }
    assertBusinessRule(await w.api('POST', `/invoices/${invoiceId}/issue`), /has no lines/);
    assertBusinessRule(await post(invoiceId, 'claim'), /is draft/);
    await assertNothingSent(invoiceId);
  });

  test('an invoice with a line without a primary diagnosis cannot be claimed; the detail names the line', async () => {
    const { invoiceId } = await draftInvoice(w);
    await addLine(w, invoiceId, lineRequest({ code: '0192', unitPrice: 100_000, diagnoses: null }));
    await invoiceAction(w, invoiceId, 'issue');
    assertBusinessRule(await post(invoiceId, 'claim'), /Line 3 \(0192\) has no primary diagnosis/);
    await assertNothingSent(invoiceId);
  });

  test('a patient without an active coverage cannot be claimed for unless coverageId is sent', async () => {
    const none = await issuedInvoice(w, { coverage: null });
    assertBusinessRule(await post(none.invoiceId, 'claim'), /no active coverage.*coverages.*coverageId/);
    await assertNothingSent(none.invoiceId);

    const ended = await issuedInvoice(w, { coverage: { startDate: '2001-01-01', endDate: '2001-06-30' } });
    assertBusinessRule(await post(ended.invoiceId, 'claim'), /no active coverage/);
    await assertNothingSent(ended.invoiceId);
  });

  test('a coverageId of another patient (or unknown) is 422 naming coverageId; nothing is sent', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const stranger = await newPatient(w);
    for (const coverageId of [stranger.coverageId, 'cov_doesNotExist0000000']) {
      const refused = await post(invoiceId, 'claim', { coverageId });
      assert.equal(refused.status, 422, refused.text);
      assert.equal(refused.body.code, 'validation_failed');
      assert.deepEqual(
        refused.body.errors.map((e: { field: string }) => e.field),
        ['coverageId'],
      );
    }
    await assertNothingSent(invoiceId);
  });

  test('a malformed ClaimRequest is refused with the field named', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const refused = await post(invoiceId, 'claim', { coverageId: 42 });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.code, 'validation_failed');
    assert.ok(
      refused.body.errors.some((e: { field: string }) => e.field === 'coverageId'),
      refused.text,
    );
    await assertNothingSent(invoiceId);
  });

  test('a second claim on the same invoice is refused, whether the first is in flight or answered', async () => {
    const { invoiceId } = await issuedInvoice(w);
    await sendClaim(w, invoiceId);
    assertBusinessRule(await post(invoiceId, 'claim'), /already has a claim that is submitting/);
    await svc.worker.drain();
    assertBusinessRule(await post(invoiceId, 'claim'), /already has a claim that is accepted.*reverse/);
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('reverse is refused unless the claim is reversible', async () => {
    const noClaim = await issuedInvoice(w);
    assertBusinessRule(await post(noClaim.invoiceId, 'claim/reverse'), /no claim to reverse/);

    const { invoiceId } = await issuedInvoice(w, { coverage: { memberNumber: 'REJECT-1' } });
    await sendClaim(w, invoiceId);
    assertBusinessRule(await post(invoiceId, 'claim/reverse', { reason: 'x' }), /submitting/);
    await svc.worker.drain();
    assertBusinessRule(await post(invoiceId, 'claim/reverse'), /rejected/);

    const accepted = await issuedInvoice(w);
    await claimAndDrain(w, accepted.invoiceId);
    await sendClaim(w, accepted.invoiceId, 'claim/reverse');
    assertBusinessRule(await post(accepted.invoiceId, 'claim/reverse'), /reversing/);
    await svc.worker.drain();
    assertBusinessRule(await post(accepted.invoiceId, 'claim/reverse'), /reversed/);
    assert.equal((await readClaim(w, accepted.invoiceId)).status, 'reversed');
    await assertStatusEvents(svc, accepted.invoiceId, 4);
  });

  test('resubmit is refused while submitting or reversing, once accepted, after a failed reversal, and without a claim', async () => {
    const noClaim = await issuedInvoice(w);
    assertBusinessRule(await post(noClaim.invoiceId, 'claim/resubmit'), /no claim yet/);

    const { invoiceId } = await issuedInvoice(w, { coverage: { memberNumber: 'REVFAIL-2' } });
    await sendClaim(w, invoiceId);
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /submitting/);
    await svc.worker.drain();
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /accepted/);
    await sendClaim(w, invoiceId, 'claim/reverse');
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /reversing/);
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'reversal_failed');
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /reversal_failed/);
    // submitting, accepted, reversing, reversal_failed: no refusal wrote an event
    await assertStatusEvents(svc, invoiceId, 4);
  });

  test('amend is refused while the claim is submitting, reversing or partially accepted, and allowed once reversed', async () => {
    // Partially accepted claims: the remittance leaves the invoice partially paid.
    const procedures = [
      { code: '0190', dx: ['J06.9'] },
      { code: '0191', dx: ['W19.9'] },
    ];
    const { invoiceId } = await issuedInvoice(w, { procedures });
    await sendClaim(w, invoiceId);
    assertBusinessRule(await post(invoiceId, 'amend'), /claim that is submitting/);
    await svc.worker.drain();
    await sendClaim(w, invoiceId, 'claim/reverse');
    assertBusinessRule(await post(invoiceId, 'amend'), /claim that is reversing/);
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'reversed');
    assert.equal((await invoiceAction(w, invoiceId, 'amend')).status, 'amending');

    const partial = await issuedInvoice(w, { procedures });
    await claimAndDrain(w, partial.invoiceId);
    await sendClaim(w, partial.invoiceId, 'claim/resubmit');
    assertBusinessRule(await post(partial.invoiceId, 'amend'), /claim that is reversing/);
    await svc.worker.drain();
    assert.equal((await readClaim(w, partial.invoiceId)).status, 'partially_accepted');
    assertBusinessRule(
      await post(partial.invoiceId, 'amend'),
      /claim that is partially_accepted; reverse it first/,
    );
    assert.equal((await getInvoice(w, partial.invoiceId)).status, 'partially_paid');
  });

  test('resubmitting a partially accepted claim checks the invoice and the coverage like a claim does', async () => {
    const { invoiceId } = await issuedInvoice(w, {
      procedures: [
        { code: '0190', dx: ['J06.9'] },
        { code: '0191', dx: ['W19.9'] },
      ],
    });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'partially_accepted');
    const stranger = await newPatient(w);
    const refused = await post(invoiceId, 'claim/resubmit', { coverageId: stranger.coverageId });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.errors[0].field, 'coverageId');

    // The patient pays the rest: a balanced invoice is not claimed again, and the claim says so.
    const invoice = await getInvoice(w, invoiceId);
    const paid = await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
      invoiceId,
      amount: invoice.balanceDue,
      method: 'card',
    });
    assert.equal(paid.status, 201, paid.text);
    assertBusinessRule(await post(invoiceId, 'claim/resubmit'), /is balanced/);
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'partially_accepted', 'nothing was reversed');
    assert.equal(claim.resubmittable, false);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('resubmit of a rejected claim with a coverage of another patient is 422 naming coverageId', async () => {
    const { invoiceId, patientId } = await issuedInvoice(w, { coverage: { memberNumber: 'REJECT-3' } });
    await claimAndDrain(w, invoiceId);
    const stranger = await newPatient(w);
    const refused = await post(invoiceId, 'claim/resubmit', { coverageId: stranger.coverageId });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.errors[0].field, 'coverageId');
    assert.equal((await readClaim(w, invoiceId)).status, 'rejected');

    const good = await addCoverage(w, patientId, { memberNumber: 'M-55' });
    const resent = await sendClaim(w, invoiceId, 'claim/resubmit', { coverageId: good });
    assert.equal(resent.status, 'submitting');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    assert.equal((await claimRow(svc, invoiceId)).coverage_id, good);
  });

  test('GET claim of an invoice without one is 404 not_found', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const none = await w.api('GET', `/invoices/${invoiceId}/claim`);
    assert.equal(none.status, 404, none.text);
    assert.equal(none.body.code, 'not_found');
    assert.equal((await w.api('GET', '/invoices/inv_doesNotExist00000000/claim')).status, 404);
  });

  test('bill with issue and submitClaim queues the claim in the same call', async () => {
    const { patientId, coverageId } = await newPatient(w);
    const billed = await billVisit(w, patientId, undefined, { issue: true, submitClaim: true });
    assert.equal(billed.body.issued, true);
    assert.equal(billed.body.claimQueued, true);
    assert.equal(billed.body.claimSkippedReason, null);
    const invoiceId = billed.body.invoice.id;
    assert.equal(billed.body.invoice.status, 'issued');
    assert.equal(billed.body.invoice.claimStatus, 'submitting');
    assert.equal(billed.body.invoice.coverageId, coverageId);
    assert.equal((await readClaim(w, invoiceId)).status, 'submitting');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('bill with submitClaim for a patient without coverage: claimQueued false with the reason; the invoice is issued', async () => {
    const { patientId } = await newPatient(w, null);
    const billed = await billVisit(w, patientId, undefined, { issue: true, submitClaim: true });
    assert.equal(billed.body.issued, true);
    assert.equal(billed.body.claimQueued, false);
    assert.match(billed.body.claimSkippedReason, /no active coverage/);
    const invoice = await getInvoice(w, billed.body.invoice.id);
    assert.equal(invoice.status, 'issued');
    assert.equal(invoice.claimStatus, null);
    assert.equal(invoice.coverageId, null);
    await assertNothingSent(invoice.id);
    // Fixed from the dashboard: add a coverage and claim.
    await addCoverage(w, patientId);
    assert.equal((await claimAndDrain(w, invoice.id)).status, 'accepted');
  });

  test('bill with submitClaim for a covered patient whose invoice comes to 0: balanced, claimQueued false, no claim status', async () => {
    // A practice of its own whose prices for the visit's codes are 0.
    const free = await newWorld(svc);
    for (const code of ['0190', '0191']) {
      const price = await svc.admin('POST', `/practices/${free.practiceId}/prices`, {
        system: TARIFF_URL,
        code,
        amount: 0,
      });
      assert.equal(price.status, 201, price.text);
    }
    const { patientId } = await newPatient(free);
    const billed = await billVisit(free, patientId, undefined, { issue: true, submitClaim: true });
    assert.equal(billed.status, 201, billed.text);
    assert.equal(billed.body.issued, true);
    assert.equal(billed.body.claimQueued, false);
    assert.match(billed.body.claimSkippedReason, /is balanced; only an issued, partially paid or overdue/);
    assert.equal(billed.body.invoice.status, 'balanced');
    assert.equal(billed.body.invoice.claimStatus, null, 'the answer shows no claim');
    assert.equal(billed.body.invoice.coverageId, null);
    const invoice = await getInvoice(free, billed.body.invoice.id);
    assert.equal(invoice.claimStatus, null, 'the stored invoice shows no claim');
    assert.equal(invoice.coverageId, null);
    assert.equal((await free.api('GET', `/invoices/${invoice.id}/claim`)).status, 404);
    await assertStatusEvents(svc, invoice.id, 0);
  });
});
