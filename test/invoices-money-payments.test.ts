// Payments and refunds recorded by an integration (POST /invoices/{id}/payments and /refunds) and by
// the operator (/admin/v1/practices/{id}/refunds): the money rules the operator's payments follow,
// each kind's own permission, Idempotency-Key replay and a concurrent pair under one key, the status
// an invoice moves through, the events, the audit rows, and reading each at its Location.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PERMISSIONS, type Permission } from '../src/auth/permissions.ts';
import { DAY, HOUR, MINUTE, refusedWith } from './billing-fixtures.ts';
import {
  assertBusinessRule,
  billVisit,
  claimAndDrain,
  eventCount,
  getInvoice,
  invoiceAction,
  issuedInvoice,
  newPatient,
  newWorld,
  type World,
} from './claims-fixtures.ts';
import { apiClient, describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

/** `iso` is an instant from `from` to `to` (milliseconds), both included. */
function assertBetween(iso: string, from: number, to: number): void {
  const at = Date.parse(iso);
  assert.ok(
    at >= from && at <= to,
    `${iso} is not between ${new Date(from).toISOString()} and ${new Date(to).toISOString()}`,
  );
}

describeEachBackend('payments and refunds from the integration', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  const pay = (invoiceId: string, body: Record<string, unknown>, idempotencyKey = uniqueKey()) =>
    w.api('POST', `/invoices/${invoiceId}/payments`, { body: { method: 'card', ...body }, idempotencyKey });
  const refund = (invoiceId: string, body: Record<string, unknown>, idempotencyKey = uniqueKey()) =>
    w.api('POST', `/invoices/${invoiceId}/refunds`, {
      body: { method: 'card', reason: 'Charged twice at the desk', ...body },
      idempotencyKey,
    });
  /** What an event of this type on the invoice says about its payment or refund, oldest first. */
  const eventDetails = async (invoiceId: string, type: string) =>
    (
      await svc.db.kysely
        .selectFrom('events')
        .select(['detail'])
        .where('type', '=', type)
        .where('object_id', '=', invoiceId)
        .orderBy('seq')
        .execute()
    ).map((e) => e.detail);
  const audited = async (resourceId: string) =>
    (await svc.admin('GET', `/practices/${w.practiceId}/audit-events?limit=100`)).body.data.filter(
      (e: { resourceId: string | null }) => e.resourceId === resourceId,
    );
  const keyWith = async (permissions: Permission[]) => {
    const client = await svc.admin('POST', `/practices/${w.practiceId}/clients`, {
      name: 'Desk',
      permissions,
    });
    assert.equal(client.status, 201, client.text);
    const key = await svc.admin('POST', `/clients/${client.body.id}/keys`, {});
    return apiClient(svc, key.body.key);
  };

  test('a payment from the desk: 201 at its Location, partially_paid then balanced, payment.created and an audit row each', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const sentAt = svc.clock.now().getTime();
    const first = await pay(invoiceId, { amount: 1000, reference: 'slip 0042' });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.object, 'payment');
    assert.equal(first.body.source, 'patient');
    assert.equal(first.body.reference, 'slip 0042');
    assertBetween(first.body.receivedAt, sentAt, svc.clock.now().getTime());
    const location = first.headers.get('location');
    assert.ok(location?.endsWith(`/api/v1/invoices/${invoiceId}/payments/${first.body.id}`), location ?? '');
    const read = await w.api('GET', `/invoices/${invoiceId}/payments/${first.body.id}`);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body, first.body);
    const partly = await getInvoice(w, invoiceId);
    assert.equal(partly.status, 'partially_paid');
    assert.equal(partly.amountPaid, 1000);
    assert.equal(partly.balanceDue, invoice.totalGross - 1000);

    const rest = await pay(invoiceId, { amount: invoice.totalGross - 1000 });
    assert.equal(rest.status, 201, rest.text);
    assert.equal((await getInvoice(w, invoiceId)).status, 'balanced');
    assert.deepEqual(await eventDetails(invoiceId, 'payment.created'), [
      { payment: { id: first.body.id, amount: 1000, currency: 'ZAR', source: 'patient' } },
      {
        payment: { id: rest.body.id, amount: invoice.totalGross - 1000, currency: 'ZAR', source: 'patient' },
      },
    ]);
    const rows = await audited(first.body.id);
    assert.equal(rows.length, 2, 'the create and the read');
    assert.deepEqual(
      rows
        .map((r: { method: string; status: number; resourceType: string }) => [
          r.method,
          r.status,
          r.resourceType,
        ])
        .sort(),
      [
        ['GET', 200, 'payment'],
        ['POST', 201, 'payment'],
      ],
    );
  });

  test('the same Idempotency-Key replays the payment; a concurrent pair under one key records it once', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const key = uniqueKey();
    const first = await pay(invoiceId, { amount: 700 }, key);
    assert.equal(first.status, 201, first.text);
    const again = await pay(invoiceId, { amount: 700 }, key);
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    refusedWith(await pay(invoiceId, { amount: 701 }, key), 422, 'idempotency_key_reused');

    const pairKey = uniqueKey();
    const pair = await Promise.all([
      pay(invoiceId, { amount: 300 }, pairKey),
      pay(invoiceId, { amount: 300 }, pairKey),
    ]);
    for (const a of pair) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text}`);
    const created = pair.filter((a) => a.status === 201);
    assert.ok(created.length >= 1);
    for (const a of created) assert.equal(a.body.id, created[0]!.body.id);
    const listed = await w.api('GET', `/invoices/${invoiceId}/payments`);
    assert.deepEqual(
      listed.body.data.map((p: { amount: number }) => p.amount),
      [700, 300],
    );
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, 1000);

    const refundKey = uniqueKey();
    const refunds = await Promise.all([
      refund(invoiceId, { amount: 200 }, refundKey),
      refund(invoiceId, { amount: 200 }, refundKey),
    ]);
    for (const a of refunds) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text}`);
    const replayed = await refund(invoiceId, { amount: 200 }, refundKey);
    assert.equal(replayed.status, 201, replayed.text);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.equal((await w.api('GET', `/invoices/${invoiceId}/refunds`)).body.data.length, 1);
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, 800);
    refusedWith(
      await w.api('POST', `/invoices/${invoiceId}/payments`, { body: { amount: 1, method: 'card' } }),
      400,
      'invalid_request',
      ['Idempotency-Key'],
    );
  });

  test('each needs its own permission: PAYMENTS:CREATE to pay, REFUNDS:CREATE to refund', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const others = PERMISSIONS.filter((p) => p !== 'PAYMENTS:CREATE' && p !== 'REFUNDS:CREATE');
    const neither = await keyWith(others);
    const payer = await keyWith(['PAYMENTS:CREATE']);
    const refunder = await keyWith(['REFUNDS:CREATE']);
    const paymentBody = { body: { amount: 500, method: 'cash' } };
    const refundBody = { body: { amount: 100, method: 'cash', reason: 'Overcharged' } };
    for (const api of [neither, refunder]) {
      refusedWith(
        await api('POST', `/invoices/${invoiceId}/payments`, { ...paymentBody, idempotencyKey: uniqueKey() }),
        403,
        'forbidden',
      );
    }
    const paid = await payer('POST', `/invoices/${invoiceId}/payments`, {
      ...paymentBody,
      idempotencyKey: uniqueKey(),
    });
    assert.equal(paid.status, 201, paid.text);
    for (const api of [neither, payer]) {
      refusedWith(
        await api('POST', `/invoices/${invoiceId}/refunds`, { ...refundBody, idempotencyKey: uniqueKey() }),
        403,
        'forbidden',
      );
    }
    const refunded = await refunder('POST', `/invoices/${invoiceId}/refunds`, {
      ...refundBody,
      idempotencyKey: uniqueKey(),
    });
    assert.equal(refunded.status, 201, refunded.text);
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, 400);
  });

  test('the money rules: no payment above the balance, none on a draft, receivedAt within its bounds', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    refusedWith(await pay(invoiceId, { amount: invoice.totalGross + 1 }), 422, 'validation_failed', [
      'amount',
    ]);
    refusedWith(await pay(invoiceId, { amount: 0 }), 422, 'validation_failed', ['amount']);
    const draft = (await billVisit(w, (await newPatient(w)).patientId, undefined, {})).body.invoice;
    assertBusinessRule(await pay(draft.id, { amount: 100 }), /draft; only an issued/);
    refusedWith(await pay('inv_nosuchinvoice', { amount: 100 }), 404, 'not_found');
    const ahead = new Date(svc.clock.now().getTime() + 6 * MINUTE).toISOString();
    refusedWith(await pay(invoiceId, { amount: 100, receivedAt: ahead }), 422, 'validation_failed', [
      'receivedAt',
    ]);
    const longAgo = new Date(svc.clock.now().getTime() - 400 * DAY).toISOString();
    refusedWith(await pay(invoiceId, { amount: 100, receivedAt: longAgo }), 422, 'validation_failed', [
      'receivedAt',
    ]);
    const skewed = new Date(svc.clock.now().getTime() + 4 * MINUTE).toISOString();
    assert.equal((await pay(invoiceId, { amount: 100, receivedAt: skewed })).status, 201);
    // the visit billed started an hour and a half ago: an hour ago is after its date of service
    const earlier = new Date(svc.clock.now().getTime() - HOUR).toISOString();
    const backdated = await pay(invoiceId, { amount: 100, receivedAt: earlier });
    assert.equal(backdated.status, 201, backdated.text);
    assert.equal(backdated.body.receivedAt, earlier);
    // The one date-time rule: an offset is required, the date must be real; answered in UTC.
    for (const receivedAt of [earlier.slice(0, 19), `${earlier.slice(0, 4)}-02-30T10:00:00Z`]) {
      refusedWith(await pay(invoiceId, { amount: 100, receivedAt }), 422, 'validation_failed', [
        'receivedAt',
      ]);
    }
    const anHourAfterThat = Math.floor((svc.clock.now().getTime() - 90 * MINUTE) / 1000) * 1000 + HOUR;
    const inJohannesburg = `${new Date(anHourAfterThat + 2 * HOUR).toISOString().slice(0, 19)}+02:00`;
    const offset = await pay(invoiceId, { amount: 100, receivedAt: inJohannesburg });
    assert.equal(offset.status, 201, offset.text);
    assert.equal(offset.body.receivedAt, new Date(anHourAfterThat).toISOString());
    const listed = await w.api('GET', `/invoices/${invoiceId}/payments`);
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id)[0],
      backdated.body.id,
      'listed by when the money was received',
    );
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, 300);
  });

  test("a payment received before the invoice's earliest date of service is refused, naming receivedAt", async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const serviceDate = invoice.lineItems[0].serviceDate;
    // two days before the date of service, wherever the practice's clock stands
    const tooEarly = new Date(Date.parse(`${serviceDate}T12:00:00Z`) - 2 * DAY).toISOString();
    const refused = await pay(invoiceId, { amount: 100, receivedAt: tooEarly });
    refusedWith(refused, 422, 'validation_failed', ['receivedAt']);
    assert.match(refused.text, /before the invoice's earliest date of service/);
    const yearBefore = new Date(svc.clock.now().getTime() - 365 * DAY).toISOString();
    refusedWith(await pay(invoiceId, { amount: 100, receivedAt: yearBefore }), 422, 'validation_failed', [
      'receivedAt',
    ]);
    const operator = await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
      invoiceId,
      amount: 100,
      method: 'card',
      receivedAt: tooEarly,
    });
    refusedWith(operator, 422, 'validation_failed', ['receivedAt']);
    assert.equal((await getInvoice(w, invoiceId)).amountPaid, 0, 'nothing was recorded');
  });

  test('a refund lowers amountPaid and raises balanceDue: balanced → partially_paid → issued, never beyond what was paid; refunded in full, it can be cancelled', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    assert.equal((await pay(invoiceId, { amount: invoice.totalGross })).status, 201);
    assert.equal((await getInvoice(w, invoiceId)).status, 'balanced');
    const sentAt = svc.clock.now().getTime();
    const part = await refund(invoiceId, { amount: 2000, reference: 'EFT 991' });
    assert.equal(part.status, 201, part.text);
    assert.equal(part.body.object, 'refund');
    assert.equal(part.body.reason, 'Charged twice at the desk');
    assertBetween(part.body.refundedAt, sentAt, svc.clock.now().getTime());
    const location = part.headers.get('location');
    assert.ok(location?.endsWith(`/api/v1/invoices/${invoiceId}/refunds/${part.body.id}`), location ?? '');
    const read = await w.api('GET', `/invoices/${invoiceId}/refunds/${part.body.id}`);
    assert.deepEqual(read.body, part.body);
    const partly = await getInvoice(w, invoiceId);
    assert.equal(partly.status, 'partially_paid');
    assert.equal(partly.amountPaid, invoice.totalGross - 2000);
    assert.equal(partly.balanceDue, 2000);

    refusedWith(await refund(invoiceId, { amount: invoice.totalGross - 1999 }), 422, 'validation_failed', [
      'amount',
    ]);
    const rest = await refund(invoiceId, { amount: invoice.totalGross - 2000 });
    assert.equal(rest.status, 201, rest.text);
    const unpaid = await getInvoice(w, invoiceId);
    assert.equal(unpaid.status, 'issued');
    assert.equal(unpaid.amountPaid, 0);
    assert.equal(unpaid.balanceDue, invoice.totalGross);
    refusedWith(await refund(invoiceId, { amount: 1 }), 422, 'validation_failed', ['amount']);

    const listed = await w.api('GET', `/invoices/${invoiceId}/refunds`);
    assert.deepEqual(
      listed.body.data.map((r: { id: string }) => r.id),
      [part.body.id, rest.body.id],
    );
    assert.deepEqual(await eventDetails(invoiceId, 'refund.created'), [
      { refund: { id: part.body.id, amount: 2000, currency: 'ZAR' } },
      { refund: { id: rest.body.id, amount: invoice.totalGross - 2000, currency: 'ZAR' } },
    ]);
    assert.equal(await eventCount(svc, invoiceId, 'payment.created'), 1, 'a refund is not a payment event');
    assert.ok(
      (await audited(part.body.id)).some(
        (r: { method: string; status: number; resourceType: string }) =>
          r.method === 'POST' && r.status === 201 && r.resourceType === 'refund',
      ),
    );
    // the payments list still reads as money received
    assert.deepEqual(
      (await w.api('GET', `/invoices/${invoiceId}/payments`)).body.data.map(
        (p: { amount: number }) => p.amount,
      ),
      [invoice.totalGross],
    );
    // everything paid was given back: nothing is paid, so the invoice can be cancelled
    const cancelled = await w.api('POST', `/invoices/${invoiceId}/cancel`, {
      body: { reason: 'Billed in error' },
    });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
  });

  test('a refund after the due date leaves an unpaid invoice overdue; one while amending lets the total come down', async () => {
    const late = await issuedInvoice(w);
    assert.equal((await pay(late.invoiceId, { amount: 500 })).status, 201);
    svc.clock.advance(40 * DAY);
    try {
      assert.equal((await refund(late.invoiceId, { amount: 500 })).status, 201);
      assert.equal((await getInvoice(w, late.invoiceId)).status, 'overdue');
    } finally {
      svc.clock.reset();
    }

    const { invoiceId, invoice } = await issuedInvoice(w);
    assert.equal((await pay(invoiceId, { amount: invoice.totalGross - 1 })).status, 201);
    await invoiceAction(w, invoiceId, 'amend');
    const second = invoice.lineItems[1];
    const deleted = () => w.api('DELETE', `/invoices/${invoiceId}/line-items/${second.id}`);
    assertBusinessRule(await deleted(), /below what was paid/);
    const back = await refund(invoiceId, { amount: second.total - 1, reason: 'Procedure not done' });
    assert.equal(back.status, 201, back.text);
    assert.equal((await getInvoice(w, invoiceId)).status, 'amending');
    assert.equal((await deleted()).status, 200);
    const reissued = await invoiceAction(w, invoiceId, 'issue');
    assert.equal(reissued.status, 'balanced');
    assert.equal(reissued.amountPaid, invoice.totalGross - second.total);
    assert.equal(reissued.balanceDue, 0);
  });

  test('states that take no refund answer 422; the insurer money is not refundable', async () => {
    const draft = (await billVisit(w, (await newPatient(w)).patientId, undefined, {})).body.invoice;
    assertBusinessRule(await refund(draft.id, { amount: 1 }), /draft; only an issued/);
    const cancelled = await issuedInvoice(w);
    const cancel = await w.api('POST', `/invoices/${cancelled.invoiceId}/cancel`, { body: { reason: 'x' } });
    assert.equal(cancel.status, 200, cancel.text);
    assertBusinessRule(await refund(cancelled.invoiceId, { amount: 1 }), /cancelled/);

    const { invoiceId } = await issuedInvoice(w);
    assert.equal((await claimAndDrain(w, invoiceId)).status, 'accepted');
    assert.equal((await getInvoice(w, invoiceId)).status, 'balanced');
    const refused = await refund(invoiceId, { amount: 1 });
    refusedWith(refused, 422, 'validation_failed', ['amount']);
    assert.match(refused.text, /claim reversal/);
  });

  test('the operator records a refund with the same rules (Idempotency-Key required, invoiceId named when wrong)', async () => {
    const { invoiceId, invoice } = await issuedInvoice(w);
    const paid = await svc.admin('POST', `/practices/${w.practiceId}/payments`, {
      invoiceId,
      amount: invoice.totalGross,
      method: 'eft',
    });
    assert.equal(paid.status, 201, paid.text);
    const path = `/practices/${w.practiceId}/refunds`;
    const body = { invoiceId, amount: 1500, method: 'eft', reason: 'Discount agreed' };
    const noKey = await fetch(`${svc.baseUrl}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(noKey.status, 400);
    const done = await svc.admin('POST', path, body);
    assert.equal(done.status, 201, done.text);
    assert.equal(done.body.object, 'refund');
    const invoiceNow = await getInvoice(w, invoiceId);
    assert.equal(invoiceNow.status, 'partially_paid');
    assert.equal(invoiceNow.balanceDue, 1500);
    refusedWith(
      await svc.admin('POST', path, { ...body, invoiceId: 'inv_nosuchinvoice' }),
      422,
      'validation_failed',
      ['invoiceId'],
    );
    refusedWith(
      await svc.admin('POST', path, { ...body, amount: invoice.totalGross }),
      422,
      'validation_failed',
      ['amount'],
    );
    const detail = await svc.admin('GET', `/practices/${w.practiceId}/invoices/${invoiceId}`);
    assert.equal(detail.status, 200, detail.text);
    assert.deepEqual(
      detail.body.refunds.map((r: { id: string }) => r.id),
      [done.body.id],
    );
  });
});
