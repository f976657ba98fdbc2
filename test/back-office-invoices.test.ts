// The operator's invoice, claim, coverage and dashboard routes the console uses: searching and paging
// invoices, reading one with its claim, events and deliveries, and fixing a rejected claim (a new
// coverage with the corrected member number, then a resubmission) with the same rules, events and
// audit rows as the public API.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asOperator } from '../src/platform/db/transaction.ts';
import {
  billVisit as billWorldVisit,
  ESSENTIAL,
  issuedInvoice,
  type Json,
  newPatient,
  newWorld,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

/** Mid-morning in Johannesburg, so the whole test falls on one calendar day there. */
const PINNED = Date.parse('2026-03-10T08:00:00Z');

describeEachBackend('admin invoices', (backend) => {
  let svc: TestService;
  let w: World;
  let receiver: Receiver;
  const base = () => `/practices/${w.practiceId}`;

  before(async () => {
    svc = await startService(backend);
    svc.clock.offsetMs = PINNED - Date.now();
    w = await newWorld(svc);
    receiver = await Receiver.start(() => svc.clock.now().getTime());
    await addEndpoint(svc, w.practiceId, receiver);
  });
  after(async () => {
    await svc.close();
    await receiver.close();
  });

  test('a rejected claim is found, fixed with a new member number, resubmitted and accepted', async () => {
    const { invoiceId, invoice, patientId, coverageId } = await issuedInvoice(w, {
      coverage: { memberNumber: 'REJECT-0001' },
    });
    const sent = await svc.admin('POST', `${base()}/invoices/${invoiceId}/claim`);
    assert.equal(sent.status, 202, sent.text);
    assert.equal(sent.body.status, 'submitting');
    await svc.worker.drain();

    const rejected = await svc.admin('GET', `${base()}/invoices?claimStatus=rejected`);
    assert.equal(rejected.status, 200, rejected.text);
    assert.deepEqual(
      rejected.body.data.map((i: Json) => i.id),
      [invoiceId],
    );
    assert.equal(rejected.body.data[0].number, invoice.number);
    assert.equal(rejected.body.data[0].patientName, 'Lerato Grace Dlamini');

    const detail = await svc.admin('GET', `${base()}/invoices/${invoiceId}`);
    assert.equal(detail.status, 200, detail.text);
    assert.equal(detail.body.claim.status, 'rejected');
    assert.match(detail.body.claim.message, /member/i);
    assert.deepEqual(
      detail.body.coverages.map((c: Json) => c.memberNumber),
      ['REJECT-0001'],
    );
    assert.deepEqual(
      detail.body.events.map((e: Json) => e.type),
      ['invoice.issued', 'claim.status_changed', 'claim.status_changed'],
    );
    assert.ok(detail.body.deliveries.length >= 1, 'the events were delivered to the endpoint');
    assert.ok(detail.body.deliveries.every((d: Json) => d.statusCode === 200));

    // Resubmitting under the same coverage is rejected again; the operator adds the right number.
    const added = await svc.admin('POST', `${base()}/patients/${patientId}/coverages`, {
      planId: ESSENTIAL.planId,
      memberNumber: 'M-555123',
    });
    assert.equal(added.status, 201, added.text);
    assert.notEqual(added.body.id, coverageId);
    const resubmitted = await svc.admin('POST', `${base()}/invoices/${invoiceId}/claim/resubmit`, {
      coverageId: added.body.id,
    });
    assert.equal(resubmitted.status, 202, resubmitted.text);
    await svc.worker.drain();

    const fixed = await svc.admin('GET', `${base()}/invoices/${invoiceId}`);
    assert.equal(fixed.body.claim.status, 'accepted');
    assert.equal(fixed.body.invoice.coverageId, added.body.id);
    assert.ok(fixed.body.claim.items.every((i: Json) => i.decision === 'approved'));
    assert.ok(
      fixed.body.payments.some((p: Json) => p.source === 'insurer'),
      'the remittance was paid',
    );

    const audit = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('audit_events')
        .select(['actor', 'route', 'resource_type'])
        .where('practice_id', '=', w.practiceId)
        .where('actor', '=', 'operator')
        .where('route', 'like', '%/invoices/%')
        .orderBy('id')
        .execute(),
    );
    assert.deepEqual(
      audit.map((a) => a.route),
      [
        '/admin/v1/practices/:practiceId/invoices/:invoiceId/claim',
        '/admin/v1/practices/:practiceId/invoices/:invoiceId/claim/resubmit',
      ],
    );

    const dashboard = await svc.admin('GET', `${base()}/dashboard`);
    assert.equal(dashboard.status, 200, dashboard.text);
    assert.equal(dashboard.body.date, '2026-03-10');
    const accepted = dashboard.body.claimsByStatus.find((s: Json) => s.status === 'accepted');
    assert.equal(accepted.count, 1);
    assert.equal(dashboard.body.money.claimed, fixed.body.invoice.totalGross);
    assert.ok(dashboard.body.money.paidByInsurer > 0);
    assert.equal(dashboard.body.days.length, 14);
    assert.equal(dashboard.body.days.at(-1).date, '2026-03-10');
    assert.equal(dashboard.body.days.at(-1).claimed, fixed.body.invoice.totalGross);
    assert.deepEqual(dashboard.body.failingEndpoints, [], 'the receiver took every delivery');
  });

  test("the dashboard counts a refund given back that day and nets it out of the day's paid", async () => {
    // A practice of its own, so that its day holds only this invoice's money.
    const own = await newWorld(svc);
    const { invoiceId } = await issuedInvoice(own, { coverage: null });
    const paid = await svc.admin('POST', `/practices/${own.practiceId}/payments`, {
      invoiceId,
      amount: 5000,
      method: 'card',
      source: 'patient',
    });
    assert.equal(paid.status, 201, paid.text);
    const refunded = await svc.admin('POST', `/practices/${own.practiceId}/refunds`, {
      invoiceId,
      amount: 1200,
      method: 'card',
      reason: 'Charged twice for the dressing',
    });
    assert.equal(refunded.status, 201, refunded.text);

    const dashboard = await svc.admin('GET', `/practices/${own.practiceId}/dashboard`);
    assert.equal(dashboard.status, 200, dashboard.text);
    assert.equal(dashboard.body.money.paidByPatient, 5000, 'the money received, before refunds');
    assert.equal(dashboard.body.money.refunded, 1200);
    assert.equal(dashboard.body.days.at(-1).paid, 3800, 'received less given back');
    assert.ok(dashboard.body.days.slice(0, -1).every((d: Json) => d.paid === 0));
  });

  test('the list searches by number and patient name and pages newest change first', async () => {
    const { patientId } = await newPatient(w);
    await svc.admin('POST', '/practices', { name: 'Another' });
    const billed = [];
    for (let i = 0; i < 3; i += 1)
      billed.push((await billWorldVisit(w, patientId, undefined, {})).body.invoice);

    const drafts = [];
    let cursor: string | null = null;
    do {
      const page: Json = await svc.admin(
        'GET',
        `${base()}/invoices?status=draft&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, page.text);
      drafts.push(...page.body.data);
      cursor = page.body.nextCursor;
    } while (cursor);
    assert.deepEqual(
      drafts.map((d) => d.id),
      billed.map((b) => b.id).reverse(),
    );

    const byNumber = await svc.admin('GET', `${base()}/invoices?q=${encodeURIComponent(billed[1].number)}`);
    assert.deepEqual(
      byNumber.body.data.map((i: Json) => i.id),
      [billed[1].id],
    );
    const byName = await svc.admin('GET', `${base()}/invoices?q=dlamINI&status=draft`);
    assert.equal(byName.body.data.length, 3);
    const nobody = await svc.admin('GET', `${base()}/invoices?q=${encodeURIComponent('%')}`);
    assert.deepEqual(nobody.body.data, [], 'a wildcard in q is taken literally');

    const first = await svc.admin('GET', `${base()}/invoices?status=draft&limit=1`);
    const otherFilters = await svc.admin(
      'GET',
      `${base()}/invoices?status=issued&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    assert.equal(otherFilters.status, 400);
    assert.equal(otherFilters.body.code, 'invalid_cursor');
  });

  test('issue and amend go through the invoice rules', async () => {
    const { patientId } = await newPatient(w);
    const draft = (await billWorldVisit(w, patientId, undefined, {})).body.invoice;
    const amendDraft = await svc.admin('POST', `${base()}/invoices/${draft.id}/amend`);
    assert.equal(amendDraft.status, 422);
    assert.equal(amendDraft.body.code, 'business_rule');
    const issued = await svc.admin('POST', `${base()}/invoices/${draft.id}/issue`);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.body.status, 'issued');
    const amended = await svc.admin('POST', `${base()}/invoices/${draft.id}/amend`);
    assert.equal(amended.body.status, 'amending');
    const unknown = await svc.admin('GET', `/practices/prc_nope/invoices/${draft.id}`);
    assert.equal(unknown.status, 404);
  });

  test("the service's refusals name no address of the public API: an operator reads them on the admin API", async () => {
    const none = await issuedInvoice(w, { coverage: null });
    const refusals = [
      await svc.admin('POST', `${base()}/invoices/${none.invoiceId}/claim`),
      await svc.admin('POST', `${base()}/invoices/${none.invoiceId}/claim/resubmit`, {}),
    ];
    const claimed = await issuedInvoice(w);
    const sent = await svc.admin('POST', `${base()}/invoices/${claimed.invoiceId}/claim`);
    assert.equal(sent.status, 202, sent.text);
    await svc.worker.drain();
    refusals.push(await svc.admin('POST', `${base()}/invoices/${claimed.invoiceId}/claim`));
    const details = refusals.map((answer) => {
      assert.equal(answer.status, 422, answer.text);
      assert.equal(answer.body.code, 'business_rule', answer.text);
      return answer.body.detail as string;
    });
    assert.match(details[0]!, /no active coverage/);
    assert.match(details[1]!, /has no claim yet/);
    assert.match(details[2]!, /already has a claim that is accepted; reverse it, or resubmit/);
    for (const detail of details) assert.doesNotMatch(detail, /POST |\/invoices\/|\/patients\//, detail);
  });
});
