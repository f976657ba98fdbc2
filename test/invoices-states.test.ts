// The invoice state table and its neighbours: issue (draft or amending only; the patient is told and
// invoice.issued written), amend (issued, partially paid, overdue or balanced, with its claim settled),
// payments recorded through the admin API (partially_paid, balanced, payment.created, never more than
// the balance), GET payments, and the scheduled job marking unpaid invoices past their due date overdue.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { markOverdueInvoices } from '../src/invoices/overdue.ts';
import { periodicTasks } from '../src/job-catalogue.ts';
import type { TaskDeps } from '../src/jobs/worker.ts';
import {
  type Api,
  asOps,
  billedInvoice,
  billingPractice,
  DAY,
  lineBody,
  refusedWith,
} from './billing-fixtures.ts';
import {
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

describeEachBackend('invoice states', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc, { vatRateBasisPoints: 1500 });
  });
  after(async () => {
    await svc.close();
  });

  const issue = (id: string) => practice.api('POST', `/invoices/${id}/issue`);
  const amend = (id: string) => practice.api('POST', `/invoices/${id}/amend`);
  const read = async (id: string) => (await practice.api('GET', `/invoices/${id}`)).body;
  const pay = (invoiceId: string, amount: number, extra: Record<string, unknown> = {}) =>
    svc.admin('POST', `/practices/${practice.practiceId}/payments`, {
      invoiceId,
      amount,
      method: 'card',
      ...extra,
    });
  const eventsOf = (invoiceId: string) =>
    asOps(svc, (trx) =>
      trx
        .selectFrom('events')
        .select(['type', 'object_type', 'object_id'])
        .where('object_id', '=', invoiceId)
        .orderBy('seq')
        .execute(),
    );
  const notificationsOf = (invoiceId: string) =>
    asOps(svc, (trx) =>
      trx.selectFrom('notifications').selectAll().where('subject_id', '=', invoiceId).execute(),
    );

  test('issue: draft → issued, then issuing again is 422 business_rule', async () => {
    const invoice = await billedInvoice(svc, practice);
    assert.deepEqual(await notificationsOf(invoice.id), []);
    const issued = await issue(invoice.id);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.body.object, 'invoice');
    assert.equal(issued.body.status, 'issued');
    assert.ok(issued.body.updatedAt > invoice.updatedAt);
    const again = await issue(invoice.id);
    refusedWith(again, 422, 'business_rule');
    assert.match(again.body.detail, /only a draft or amending invoice can be issued/);
    assert.deepEqual(await read(invoice.id), issued.body);
    assert.equal((await notificationsOf(invoice.id)).length, 1, 'the refusal told nobody');
    assert.deepEqual(await eventsOf(invoice.id), [
      { type: 'invoice.issued', object_type: 'invoice', object_id: invoice.id },
    ]);
    refusedWith(await issue('inv_madeup000000000000'), 404, 'not_found');
  });

  test('amend: a draft is refused; issued → amending → issued again tells the patient again', async () => {
    const invoice = await billedInvoice(svc, practice);
    const refused = await amend(invoice.id);
    refusedWith(refused, 422, 'business_rule');
    assert.equal((await read(invoice.id)).status, 'draft');
    assert.equal((await issue(invoice.id)).status, 200);
    const amending = await amend(invoice.id);
    assert.equal(amending.status, 200, amending.text);
    assert.equal(amending.body.status, 'amending');
    refusedWith(await amend(invoice.id), 422, 'business_rule');
    const reissued = await issue(invoice.id);
    assert.equal(reissued.body.status, 'issued');
    assert.equal((await notificationsOf(invoice.id)).length, 2);
    assert.deepEqual(
      (await eventsOf(invoice.id)).map((e) => e.type),
      ['invoice.issued', 'invoice.issued'],
    );
    refusedWith(await amend('inv_madeup000000000000'), 404, 'not_found');
  });

  test('payments move an issued invoice to partially_paid and balanced, keeping the amounts consistent', async () => {
    const invoice = await billedInvoice(svc, practice, { issue: true });
    assert.equal(invoice.totalGross, 55000 + 8250);
    const first = await pay(invoice.id, 20000, { reference: 'R-1' });
    assert.equal(first.status, 201, first.text);
    const { id, receivedAt, ...rest } = first.body;
    assert.match(id, /^pay_/);
    assert.ok(Math.abs(Date.parse(receivedAt) - svc.clock.now().getTime()) < 60_000);
    assert.deepEqual(rest, {
      object: 'payment',
      invoiceId: invoice.id,
      amount: 20000,
      currency: 'ZAR',
      method: 'card',
      source: 'patient',
      reference: 'R-1',
    });
    let now = await read(invoice.id);
    assert.equal(now.status, 'partially_paid');
    assert.equal(now.amountPaid, 20000);
    assert.equal(now.balanceDue, 63250 - 20000);

    const tooMuch = await pay(invoice.id, 43251);
    refusedWith(tooMuch, 422, 'validation_failed', ['amount']);
    assert.equal((await read(invoice.id)).amountPaid, 20000);

    const rest2 = await pay(invoice.id, 43250, { source: 'insurer' });
    assert.equal(rest2.status, 201, rest2.text);
    now = await read(invoice.id);
    assert.equal(now.status, 'balanced');
    assert.equal(now.amountPaid, 63250);
    assert.equal(now.balanceDue, 0);
    refusedWith(await pay(invoice.id, 1), 422, 'business_rule');

    const listed = await practice.api('GET', `/invoices/${invoice.id}/payments`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.object, 'list');
    assert.equal(listed.body.hasMore, false);
    assert.deepEqual(listed.body.data, [first.body, rest2.body]);
    assert.deepEqual(
      (await eventsOf(invoice.id)).map((e) => [e.type, e.object_type]),
      [
        ['invoice.issued', 'invoice'],
        ['payment.created', 'invoice'],
        ['payment.created', 'invoice'],
      ],
    );
  });

  test('payments are refused on a draft, and for an invoice of another practice', async () => {
    const invoice = await billedInvoice(svc, practice);
    refusedWith(await pay(invoice.id, 100), 422, 'business_rule');
    const empty = await practice.api('GET', `/invoices/${invoice.id}/payments`);
    assert.deepEqual(empty.body, { object: 'list', data: [], hasMore: false, nextCursor: null });
    const other = await billingPractice(svc);
    const theirs = await billedInvoice(svc, other, { issue: true });
    refusedWith(await pay(theirs.id, 100), 422, 'validation_failed', ['invoiceId']);
    refusedWith(await pay(invoice.id, 0), 422, 'validation_failed', ['amount']);
    refusedWith(await practice.api('GET', `/invoices/${theirs.id}/payments`), 404, 'not_found');
    assert.equal((await read(invoice.id)).amountPaid, 0);
  });

  test('amend works from partially_paid; the payments stay and the balance follows the new lines', async () => {
    const invoice = await billedInvoice(svc, practice, { issue: true });
    assert.equal((await pay(invoice.id, 10000)).status, 201);
    const amending = await amend(invoice.id);
    assert.equal(amending.status, 200, amending.text);
    assert.equal(amending.body.status, 'amending');
    refusedWith(await pay(invoice.id, 100), 422, 'business_rule');
    const added = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({ unitPrice: 10000 }),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.body.totalGross, 65000 + 9750);
    assert.equal(added.body.amountPaid, 10000);
    assert.equal(added.body.balanceDue, 74750 - 10000);
  });

  test('a VAT change leaves an issued invoice as issued: a payment keeps its totals; issuing it again applies the new rate', async () => {
    const own = await billingPractice(svc, { vatRateBasisPoints: 1500 });
    const invoice = await billedInvoice(svc, own, { issue: true });
    const net = invoice.totalNet as number;
    const gross = invoice.totalGross as number;
    assert.equal(gross, net + Math.round((net * 1500) / 10000), 'issued with 15% VAT');
    const settings = await svc.admin('PUT', `/practices/${own.practiceId}/billing-settings`, {
      vatRateBasisPoints: 0,
      paymentTermsDays: 30,
      invoiceNumberPrefix: 'INV-',
    });
    assert.equal(settings.status, 200, settings.text);
    const paid = await svc.admin('POST', `/practices/${own.practiceId}/payments`, {
      invoiceId: invoice.id,
      amount: 5000,
      method: 'card',
    });
    assert.equal(paid.status, 201, paid.text);
    const afterPayment = (await own.api('GET', `/invoices/${invoice.id}`)).body;
    assert.equal(afterPayment.totalNet, net);
    assert.equal(afterPayment.totalGross, gross);
    assert.equal(afterPayment.balanceDue, gross - 5000);
    assert.equal((await own.api('POST', `/invoices/${invoice.id}/amend`)).status, 200);
    const reissued = await own.api('POST', `/invoices/${invoice.id}/issue`);
    assert.equal(reissued.status, 200, reissued.text);
    assert.equal(reissued.body.totalNet, net);
    assert.equal(reissued.body.totalGross, net);
    assert.equal(reissued.body.balanceDue, net - 5000);
  });

  test('amend is refused while a claim is submitting, reversing or accepted, and allowed once it is settled', async () => {
    const invoice = await billedInvoice(svc, practice, { issue: true });
    const claimStatus = (status: string | null) =>
      asOps(svc, (trx) =>
        trx.updateTable('invoices').set({ claim_status: status }).where('id', '=', invoice.id).execute(),
      );
    for (const [status, next] of [
      ['submitting', /wait for the insurer's answer/],
      ['reversing', /wait for the insurer's answer/],
      ['accepted', /reverse it first/],
      ['partially_accepted', /reverse it first/],
      ['reversal_failed', /reverse it first/],
    ] as const) {
      await claimStatus(status);
      const refused = await amend(invoice.id);
      refusedWith(refused, 422, 'business_rule');
      assert.match(refused.body.detail, new RegExp(`claim that is ${status}; `));
      assert.match(refused.body.detail, next);
    }
    await claimStatus('rejected');
    assert.equal((await amend(invoice.id)).body.status, 'amending');
  });

  test('an unpaid invoice past its due date becomes overdue, not before; it can still be paid and amended', async () => {
    const practiceTz = await billingPractice(svc, { paymentTermsDays: 7 });
    const invoice = await billedInvoice(svc, practiceTz, { issue: true });
    const partly = await billedInvoice(svc, practiceTz, { issue: true });
    const draft = await billedInvoice(svc, practiceTz);
    const paid = await billedInvoice(svc, practiceTz, { issue: true });
    const payIn = (id: string, amount: number) =>
      svc.admin('POST', `/practices/${practiceTz.practiceId}/payments`, {
        invoiceId: id,
        amount,
        method: 'cash',
      });
    assert.equal((await payIn(partly.id, 100)).status, 201);
    assert.equal((await payIn(paid.id, paid.totalGross)).status, 201);
    const readTz = async (id: string) => (await practiceTz.api('GET', `/invoices/${id}`)).body;
    const statuses = async () =>
      Promise.all([invoice, partly, draft, paid].map(async (i) => (await readTz(i.id)).status));
    assert.equal(
      invoice.dueDate,
      new Date(Date.parse(`${invoice.date}T00:00:00Z`) + 7 * DAY).toISOString().slice(0, 10),
    );
    // late on the due date itself, in the practice's zone (Johannesburg, UTC+2): not yet overdue
    const runUntilDone = async (at: Date) => {
      while ((await markOverdueInvoices(svc.db, at)) > 0) {}
    };
    await runUntilDone(new Date(`${invoice.dueDate}T21:59:00Z`));
    assert.deepEqual(await statuses(), ['issued', 'partially_paid', 'draft', 'balanced']);
    const before = await readTz(invoice.id);
    // just after midnight the next day in Johannesburg (still the due date in UTC)
    await runUntilDone(new Date(`${invoice.dueDate}T22:01:00Z`));
    // a partly paid invoice says so rather than overdue: its status follows its money first
    assert.deepEqual(await statuses(), ['overdue', 'partially_paid', 'draft', 'balanced']);
    const overdue = await readTz(invoice.id);
    assert.ok(overdue.updatedAt > before.updatedAt, 'the change feed sees it');
    assert.equal(overdue.balanceDue, before.balanceDue);
    // repeatable: a second run changes nothing
    assert.equal(await markOverdueInvoices(svc.db, new Date(`${invoice.dueDate}T23:00:00Z`)), 0);
    assert.equal((await readTz(invoice.id)).updatedAt, overdue.updatedAt);

    assert.equal((await payIn(partly.id, partly.totalGross - 100)).status, 201);
    assert.equal((await readTz(partly.id)).status, 'balanced');
    const amended = await practiceTz.api('POST', `/invoices/${invoice.id}/amend`);
    assert.equal(amended.status, 200, amended.text);
    assert.equal(amended.body.status, 'amending');
  });

  test('the worker runs the overdue job on its schedule with its clock', async () => {
    const task = periodicTasks(svc.deps.config).find((t) => t.name === 'mark-overdue-invoices');
    assert.ok(task, 'the overdue job is scheduled');
    assert.ok(task.everyMs <= 60 * 60 * 1000);
    const invoice = await billedInvoice(svc, practice, { issue: true });
    const deps: TaskDeps = { db: svc.db, clock: svc.clock };
    while ((await task.run(deps)) > 0) {}
    assert.equal((await read(invoice.id)).status, 'issued');
    svc.clock.advance(32 * DAY);
    try {
      while ((await task.run(deps)) > 0) {}
    } finally {
      svc.clock.reset();
    }
    assert.equal((await read(invoice.id)).status, 'overdue');
  });
});
