// The claim lifecycle through the public API: reversal (reversed, reversal_failed and a second try),
// resubmission of a rejected or reversed claim built from the invoice's current lines, and the
// resubmission of a partially accepted claim, which reverses it first and then sends it again by
// itself. After every step the invoice's claimStatus equals the claim's status, and every status
// change wrote exactly one claim.status_changed event.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  addCoverage,
  addLine,
  approved,
  assertStatusEvents,
  claimAndDrain,
  claimRow,
  denied,
  draftInvoice,
  ESSENTIAL,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  itemCodes,
  lineRequest,
  newWorld,
  readClaim,
  runDueJobsOf,
  sendClaim,
  statusEvents,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const W19_SECOND_LINE = [
  { code: '0190', dx: ['J06.9'] },
  { code: '0191', dx: ['W19.9', 'J06.9'] },
];

describeEachBackend('claim lifecycle', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  /** Fixes line `index` of an issued invoice: amend, PUT the line with a J06.9 primary, issue again. */
  async function fixLine(invoiceId: string, index: number) {
    const amending = await invoiceAction(w, invoiceId, 'amend');
    assert.equal(amending.status, 'amending');
    const line = amending.lineItems[index];
    const replaced = await w.api('PUT', `/invoices/${invoiceId}/line-items/${line.id}`, {
      body: lineRequest({
        code: line.code,
        unitPrice: line.unitPrice,
        serviceDate: line.serviceDate,
        pricingSource: line.pricingSource,
        diagnoses: [{ code: 'J06.9', primary: true }],
      }),
    });
    assert.equal(replaced.status, 200, replaced.text);
    return replaced.body;
  }

  test('an accepted claim is reversed: 202 reversing, then reversed (complete, resubmittable)', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const accepted = await claimAndDrain(w, invoiceId);
    assert.equal(accepted.status, 'accepted');

    const reversing = await sendClaim(w, invoiceId, 'claim/reverse', {
      reason: 'Billed to the wrong member',
    });
    assert.equal(reversing.status, 'reversing');
    assert.equal(reversing.reversible, false);
    assert.equal(reversing.resubmittable, false);
    assert.equal((await readClaim(w, invoiceId)).status, 'reversing');

    await svc.worker.drain();
    const reversed = await readClaim(w, invoiceId);
    assert.equal(reversed.status, 'reversed');
    assert.equal(reversed.outcome, 'complete');
    assert.equal(reversed.resubmittable, true);
    assert.equal(reversed.reversible, false);
    assert.equal(reversed.message, null);
    assert.deepEqual(
      reversed.items.map(itemCodes),
      [approved(invoice.lineItems[0], 1), approved(invoice.lineItems[1], 2)],
      'the items say what was reversed',
    );
    await assertStatusEvents(svc, invoiceId, 4);
  });

  test('a REVFAIL member makes reversals fail: reversal_failed (error, reversible), and a retry fails again', async () => {
    const { invoiceId } = await issuedInvoice(w, { coverage: { memberNumber: 'REVFAIL-31' } });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted', 'REVFAIL only touches reversals');

    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    let claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'reversal_failed');
    assert.equal(claim.outcome, 'error');
    assert.equal(claim.reversible, true);
    assert.equal(claim.resubmittable, false);
    assert.match(claim.message, /could not reverse/);
    assert.ok(claim.authorizationReference, 'the acceptance still stands');

    const again = await sendClaim(w, invoiceId, 'claim/reverse', { reason: 'second try' });
    assert.equal(again.status, 'reversing');
    assert.equal(again.message, null);
    await svc.worker.drain();
    claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'reversal_failed');
    // submitting, accepted, reversing, reversal_failed, reversing, reversal_failed
    await assertStatusEvents(svc, invoiceId, 6);
  });

  test('a rejected claim is resubmitted from the current lines: amend, fix the W19.9 line, issue, resubmit → accepted', async () => {
    const { invoiceId } = await issuedInvoice(w, { procedures: [{ code: '0190', dx: ['W19.9'] }] });
    const rejected = await claimAndDrain(w, invoiceId);
    assert.equal(rejected.status, 'rejected');

    await fixLine(invoiceId, 0);
    await addLine(w, invoiceId, lineRequest({ code: '0191', unitPrice: ESSENTIAL.rate0191 }));
    const current = await invoiceAction(w, invoiceId, 'issue');
    assert.equal(current.claimStatus, 'rejected');

    svc.clock.advance(5_000);
    const resent = await sendClaim(w, invoiceId, 'claim/resubmit');
    assert.equal(resent.id, rejected.id, 'the same claim, sent again');
    assert.equal(resent.status, 'submitting');
    assert.equal(resent.message, null);
    assert.equal(resent.authorizationReference, null);
    assert.deepEqual(resent.items, [], 'no decision of the earlier submission is shown as this one');
    assert.ok(
      Date.parse(resent.submittedAt) > Date.parse(rejected.submittedAt),
      'submittedAt is the resubmission',
    );

    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.ok(claim.authorizationReference);
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(current.lineItems[0], 1),
      approved(current.lineItems[1], 2),
    ]);
    // submitting, rejected, submitting, accepted
    await assertStatusEvents(svc, invoiceId, 4);
  });

  test('a reversed claim is resubmitted after the line is fixed, and accepted', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { procedures: W19_SECOND_LINE });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'partially_accepted');
    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'reversed');

    await fixLine(invoiceId, 1);
    const current = await invoiceAction(w, invoiceId, 'issue');
    assert.deepEqual(
      current.lineItems.map((l: { id: string }) => l.id),
      invoice.lineItems.map((l: { id: string }) => l.id),
    );
    const resent = await sendClaim(w, invoiceId, 'claim/resubmit');
    assert.equal(resent.status, 'submitting');
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(current.lineItems[0], 1),
      approved(current.lineItems[1], 2),
    ]);
    // submitting, partially_accepted, reversing, reversed, submitting, accepted
    await assertStatusEvents(svc, invoiceId, 6);
  });

  test('resubmitting a partially accepted claim reverses it, then sends it again by itself', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { procedures: W19_SECOND_LINE });
    const partial = await claimAndDrain(w, invoiceId);
    assert.equal(partial.status, 'partially_accepted');
    await assertStatusEvents(svc, invoiceId, 2);
    const firstSubmission = (await claimRow(svc, invoiceId)).submission_id;

    const reversing = await sendClaim(w, invoiceId, 'claim/resubmit');
    assert.equal(reversing.status, 'reversing', 'accepted lines are reversed first');
    assert.equal((await readClaim(w, invoiceId)).status, 'reversing');
    await assertStatusEvents(svc, invoiceId, 3);

    // Only the reversal runs: it is answered, and the claim goes on to submitting by itself.
    assert.equal(await runDueJobsOf(svc, 'claim.reverse'), 1);
    const resent = await readClaim(w, invoiceId);
    assert.equal(resent.status, 'submitting');
    assert.equal(resent.outcome, 'queued');
    assert.deepEqual(resent.items, []);
    assert.notEqual((await claimRow(svc, invoiceId)).submission_id, firstSubmission, 'a new submission');
    await assertStatusEvents(svc, invoiceId, 5);

    await svc.worker.drain();
    const answered = await readClaim(w, invoiceId);
    assert.equal(answered.status, 'partially_accepted', 'the same lines get the same answer');
    assert.deepEqual(answered.items.map(itemCodes), [
      approved(invoice.lineItems[0], 1),
      denied(invoice.lineItems[1], 2, 'DIAGNOSIS_NOT_PRIMARY'),
    ]);
    // submitting, partially_accepted, reversing, reversed, submitting, partially_accepted
    const events = await statusEvents(svc, invoiceId);
    assert.equal(events.length, 6);
    for (let i = 1; i < events.length; i++) {
      assert.ok(Number(events[i]!.seq) > Number(events[i - 1]!.seq));
      assert.ok(events[i]!.occurred_at.getTime() >= events[i - 1]!.occurred_at.getTime());
    }
  });

  test('resubmitting a partially accepted claim with another coverageId sends it under that coverage', async () => {
    const { invoiceId, patientId, coverageId } = await issuedInvoice(w, { procedures: W19_SECOND_LINE });
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'partially_accepted');
    const other = await addCoverage(w, patientId, { memberNumber: 'REJECT-77' });

    await sendClaim(w, invoiceId, 'claim/resubmit', { coverageId: other });
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'rejected', 'answered under the REJECT coverage');
    assert.match(claim.message, /REJECT-77/);
    assert.equal((await claimRow(svc, invoiceId)).coverage_id, other);
    assert.notEqual(other, coverageId);
  });

  test('a resubmission that times out is rejected without showing the earlier decisions', async () => {
    // One line above the plan rate: the remittance pays less than the total, so the invoice stays
    // partially paid (claim-ready) after the acceptance.
    const { invoiceId, patientId } = await draftInvoice(w, {
      procedures: [{ code: '0190', dx: ['J06.9'] }],
    });
    await addLine(w, invoiceId, lineRequest({ unitPrice: 60_000 }));
    await invoiceAction(w, invoiceId, 'issue');
    const accepted = await claimAndDrain(w, invoiceId);
    assert.equal(accepted.status, 'accepted');
    assert.equal((await getInvoice(w, invoiceId)).status, 'partially_paid');
    await sendClaim(w, invoiceId, 'claim/reverse');
    await svc.worker.drain();
    assert.equal((await readClaim(w, invoiceId)).status, 'reversed');

    const timeout = await addCoverage(w, patientId, { memberNumber: 'TIMEOUT-55' });
    const resent = await sendClaim(w, invoiceId, 'claim/resubmit', { coverageId: timeout });
    assert.equal(resent.status, 'submitting');
    assert.deepEqual(resent.items, [], "the earlier decisions are not this submission's");
    await svc.worker.drain();
    assert.deepEqual((await readClaim(w, invoiceId)).items, []);
    svc.clock.advance(901 * 1000);
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'rejected');
    assert.match(claim.message, /did not answer/);
    assert.deepEqual(claim.items, [], 'a rejected claim lists no approved line of an earlier submission');
    // submitting, accepted, reversing, reversed, submitting, rejected
    await assertStatusEvents(svc, invoiceId, 6);
  });
});
