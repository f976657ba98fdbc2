// Every answer the sandbox insurer gives, reached through the public API with the exact per-line items:
// accepted, partially accepted (external-cause primary diagnosis, a code the plan does not cover),
// approved with a warning above the plan rate, rejected (REJECT member, inactive membership) and the
// time-out of an insurer that never answers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import {
  addLine,
  approved,
  assertStatusEvents,
  claimAndDrain,
  denied,
  draftInvoice,
  ESSENTIAL,
  getInvoice,
  INACTIVE_PLAN,
  invoiceAction,
  issuedInvoice,
  itemCodes,
  jobsOfClaim,
  lineRequest,
  NOT_COVERED_CODE,
  newWorld,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const MINUTE = 60_000;

describeEachBackend('claim outcomes', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  test('a claim is queued (202 submitting), then accepted line by line at the plan rates', async () => {
    const { invoiceId, invoice, coverageId } = await issuedInvoice(w);
    assert.deepEqual(
      invoice.lineItems.map((l: { total: number }) => l.total),
      [ESSENTIAL.rate0190, ESSENTIAL.rate0191],
      'bill priced the lines at the plan rates',
    );
    const sent = await sendClaim(w, invoiceId);
    assert.equal(sent.status, 'submitting');
    assert.deepEqual(sent.items, []);
    assert.equal(sent.authorizationReference, null);
    assert.ok(!Number.isNaN(Date.parse(sent.submittedAt)), 'submittedAt is a date-time');
    const queued = await getInvoice(w, invoiceId);
    assert.equal(queued.claimStatus, 'submitting');
    assert.equal(queued.coverageId, coverageId);
    assert.equal(
      (await readClaim(w, invoiceId)).status,
      'submitting',
      'nothing happens before the worker runs',
    );

    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.id, sent.id);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.outcome, 'complete');
    assert.equal(claim.message, null);
    assert.match(claim.authorizationReference, /^SBX-[0-9A-F]{12}$/);
    assert.ok(claim.submittedAt);
    assert.equal(claim.currency, invoice.currency);
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(invoice.lineItems[0], 1),
      approved(invoice.lineItems[1], 2),
    ]);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a line whose primary diagnosis is an external cause (W19.9) is denied: partially accepted', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, {
      procedures: [
        { code: '0190', dx: ['J06.9'] },
        { code: '0191', dx: ['W19.9', 'J06.9'] },
      ],
    });
    assert.deepEqual(
      invoice.lineItems[1].diagnoses.map((d: { code: string; primary: boolean }) => [d.code, d.primary]),
      [
        ['W19.9', true],
        ['J06.9', false],
      ],
    );
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'partially_accepted');
    assert.equal(claim.outcome, 'partial');
    assert.equal(claim.message, null);
    assert.ok(claim.authorizationReference);
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(invoice.lineItems[0], 1),
      denied(invoice.lineItems[1], 2, 'DIAGNOSIS_NOT_PRIMARY'),
    ]);
    assert.match(claim.items[1].rejections[0].description, /W19\.9/);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a code the plan has no rate for is denied NOT_COVERED; a line above the plan rate is paid at the plan rate with ABOVE_PLAN_RATE', async () => {
    const { invoiceId } = await draftInvoice(w, { procedures: [{ code: '0190', dx: ['J06.9'] }] });
    await addLine(w, invoiceId, lineRequest({ code: NOT_COVERED_CODE, unitPrice: 118_000 }));
    await addLine(w, invoiceId, lineRequest({ code: '0190', unitPrice: 60_000, pricingSource: null }));
    const invoice = await invoiceAction(w, invoiceId, 'issue');
    const [plain, notCovered, aboveRate] = invoice.lineItems;
    assert.equal(aboveRate.total, 60_000);

    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'partially_accepted');
    assert.equal(claim.outcome, 'partial');
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(plain, 1),
      denied(notCovered, 2, 'NOT_COVERED'),
      {
        lineNumber: 3,
        lineItemId: aboveRate.id,
        decision: 'approved_with_warning',
        submitted: 60_000,
        benefit: ESSENTIAL.rate0190,
        rejections: [],
        warnings: ['ABOVE_PLAN_RATE'],
      },
    ]);
  });

  test('approved_with_warning counts as approved: a claim whose lines are all paid is accepted', async () => {
    const { invoiceId } = await draftInvoice(w, { procedures: [{ code: '0191', dx: ['I10'] }] });
    await addLine(w, invoiceId, lineRequest({ unitPrice: ESSENTIAL.rate0190 + 1, quantity: 1 }));
    const invoice = await invoiceAction(w, invoiceId, 'issue');
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.outcome, 'complete');
    assert.deepEqual(claim.items.map(itemCodes), [
      approved(invoice.lineItems[0], 1),
      {
        lineNumber: 2,
        lineItemId: invoice.lineItems[1].id,
        decision: 'approved_with_warning',
        submitted: ESSENTIAL.rate0190 + 1,
        benefit: ESSENTIAL.rate0190,
        rejections: [],
        warnings: ['ABOVE_PLAN_RATE'],
      },
    ]);
  });

  test('a REJECT member has the whole claim rejected with a message; it can be resubmitted', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, { coverage: { memberNumber: 'REJECT-4411' } });
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'rejected');
    assert.equal(claim.outcome, 'error');
    assert.equal(claim.resubmittable, true);
    assert.equal(claim.reversible, false);
    assert.match(claim.message, /REJECT-4411/);
    assert.equal(claim.authorizationReference, null);
    assert.deepEqual(claim.items.map(itemCodes), [
      denied(invoice.lineItems[0], 1, 'CLAIM_REJECTED'),
      denied(invoice.lineItems[1], 2, 'CLAIM_REJECTED'),
    ]);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a claim whose every line is denied is rejected, saying no line was approved', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w, {
      procedures: [{ code: '0190', dx: ['W19.9'] }],
    });
    const claim = await claimAndDrain(w, invoiceId);
    assert.equal(claim.status, 'rejected');
    assert.equal(claim.outcome, 'error');
    assert.ok(claim.message);
    assert.deepEqual(claim.items.map(itemCodes), [denied(invoice.lineItems[0], 1, 'DIAGNOSIS_NOT_PRIMARY')]);
  });

  for (const [label, coverage] of [
    ['a plan no longer offered', { planId: INACTIVE_PLAN, memberNumber: 'SAVER-1' }],
    ['a membership that ended', { memberNumber: 'ENDED-1', startDate: '2000-01-01', endDate: '2000-12-31' }],
  ] as const) {
    test(`a claim under ${label} (coverageId given) is rejected: membership not active`, async () => {
      const { invoiceId, invoice, coverageId } = await issuedInvoice(w, { coverage });
      const claim = await claimAndDrain(w, invoiceId, { coverageId });
      assert.equal(claim.status, 'rejected');
      assert.equal(claim.outcome, 'error');
      assert.match(claim.message, /not active/);
      assert.equal((await getInvoice(w, invoiceId)).coverageId, coverageId);
      assert.deepEqual(
        claim.items.map(itemCodes),
        invoice.lineItems.map((l: unknown, i: number) => denied(l, i + 1, 'CLAIM_REJECTED')),
      );
    });
  }

  test('a TIMEOUT member is retried while submitting, then rejected once the answer window closes', async () => {
    const { invoiceId } = await issuedInvoice(w, { coverage: { memberNumber: 'TIMEOUT-9' } });
    const sent = await sendClaim(w, invoiceId);
    await svc.worker.drain();
    let claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'submitting', 'no answer yet: still submitting');
    assert.equal(claim.outcome, 'queued');
    let [job] = await jobsOfClaim(svc, sent.id);
    assert.equal(job!.state, 'queued', 'the submission is retried');
    assert.equal(job!.attempts, 1);
    assert.match(job!.last_error ?? '', /TIMEOUT/);
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(svc.db.kysely);
    assert.ok(
      job!.run_at.getTime() > rows[0]!.now.getTime(),
      'retried later (on the database clock), not at once',
    );

    for (const attempt of [2, 3]) {
      svc.clock.advance(MINUTE);
      await svc.worker.drain();
      claim = await readClaim(w, invoiceId);
      assert.equal(claim.status, 'submitting');
      [job] = await jobsOfClaim(svc, sent.id);
      assert.equal(job!.attempts, attempt);
    }

    svc.clock.advance(900 * 1000);
    await svc.worker.drain();
    claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'rejected');
    assert.equal(claim.outcome, 'error');
    assert.equal(claim.resubmittable, true);
    assert.match(claim.message, /did not answer/);
    assert.match(claim.message, /15 minutes/);
    assert.deepEqual(claim.items, [], 'the insurer decided no line');
    [job] = await jobsOfClaim(svc, sent.id);
    assert.equal(job!.state, 'done');
    await assertStatusEvents(svc, invoiceId, 2);
  });
});
