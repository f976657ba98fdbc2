// What a receiver gets: the billing and claims flows deliver invoice.issued, claim.status_changed and
// payment.created, each a signed POST whose body is exactly {id, type, occurredAt, data: {object,
// id, url}} (and which claim or payment, on their events), with an absolute url that reads the invoice with the API key and no patient data; every
// attempt carries the event id as webhook-id and a fresh timestamp and signature.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { handedOverWith } from '../src/jobs/handoff.ts';
import { takeDueJobs } from '../src/jobs/queue.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { type PreparedAttempt, prepareTakenDeliveries } from '../src/webhooks/delivery.ts';
import { apiClient, call, describeEachBackend, startService, type TestService } from './harness.ts';
import { addEndpoint, attempts, billVisit, endpointPath, Receiver, verifyAt } from './webhooks-fixtures.ts';

describeEachBackend('webhook deliveries', (backend) => {
  let svc: TestService;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await Receiver.forService(svc);
    receivers.push(r);
    return r;
  };

  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test('the billing and claims flows deliver signed events that name the invoice and carry no patient data', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const visit = await billVisit(svc, practice, { claim: true });
    await svc.worker.drain();

    assert.ok(r.requests.length >= 3, `deliveries: ${r.requests.map((x) => x.body).join('\n')}`);
    r.assertAllVerified();
    const count = (type: string) => r.requests.filter((x) => x.payload.type === type).length;
    assert.equal(count('invoice.issued'), 1);
    assert.ok(count('claim.status_changed') >= 1, 'the claim status changes are sent');
    assert.equal(count('payment.created'), 1, 'the insurer remittance is a payment');
    assert.equal(
      r.requests.length,
      count('invoice.issued') + count('claim.status_changed') + count('payment.created'),
      'no other event types',
    );
    assert.equal(r.uniqueIds().size, r.requests.length, 'one delivery per event, each its own id');

    const api = apiClient(svc, practice.key);
    const forbidden = [
      ...visit.patient.givenNames,
      visit.patient.lastName,
      visit.patient.birthDate,
      visit.patient.externalIdValue,
      visit.patient.id,
    ];
    for (const request of r.requests) {
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/hook');
      assert.match(String(request.headers['content-type']), /^application\/json/);
      const body = request.payload;
      assert.deepEqual(Object.keys(body).sort(), ['data', 'id', 'occurredAt', 'type']);
      const detail = {
        'invoice.issued': [],
        'claim.status_changed': ['claim'],
        'payment.created': ['payment'],
      };
      assert.deepEqual(
        Object.keys(body.data).sort(),
        [...detail[body.type as keyof typeof detail], 'id', 'object', 'url'].sort(),
        `${body.type}: the invoice, and which claim or payment`,
      );
      assert.equal(request.webhookId, body.id, 'webhook-id is the event id');
      assert.match(body.id, /^evt_/);
      assert.match(body.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.equal(new Date(body.occurredAt).toISOString(), body.occurredAt);
      assert.equal(body.data.object, 'invoice', `${body.type} names the invoice`);
      assert.equal(body.data.id, visit.invoiceId);
      const url = new URL(body.data.url);
      assert.equal(url.href, `${svc.baseUrl}/api/v1/invoices/${visit.invoiceId}`, 'an absolute url');
      for (const value of forbidden)
        assert.ok(!request.body.includes(value), `${body.type} body carries patient data "${value}"`);
      assert.equal(request.signatures.length, 1);
      assert.match(request.signatures[0]!, /^v1,[A-Za-z0-9+/]+=*$/);
      assert.ok(Math.abs(request.timestamp * 1000 - request.at) < 5_000, 'timestamp is when it was sent');
    }

    // The url reads the invoice with the practice's key, and only with it.
    const url = r.requests[0]!.payload.data.url as string;
    const read = await call(url, 'GET', '', { token: practice.key });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.id, visit.invoiceId);
    assert.equal((await call(url, 'GET', '')).status, 401);
    const same = await api('GET', `/invoices/${visit.invoiceId}`);
    assert.equal(same.body.id, read.body.id);

    // A claim event names the claim and its new status; a payment event the payment, as the API reads them.
    const claim = await api('GET', `/invoices/${visit.invoiceId}/claim`);
    const claimEvents = r.requests.filter((x) => x.payload.type === 'claim.status_changed');
    assert.ok(claimEvents.every((x) => x.payload.data.claim.id === claim.body.id));
    assert.equal(claimEvents[0]!.payload.data.claim.status, 'submitting');
    assert.equal(
      [...claimEvents].sort((a, b) => a.payload.occurredAt.localeCompare(b.payload.occurredAt)).at(-1)!
        .payload.data.claim.status,
      claim.body.status,
      'the last claim event carries the status the claim has now',
    );
    const payments = await api('GET', `/invoices/${visit.invoiceId}/payments`);
    const paymentEvent = r.requests.find((x) => x.payload.type === 'payment.created')!.payload;
    const payment = payments.body.data[0];
    assert.deepEqual(paymentEvent.data.payment, {
      id: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      source: 'insurer',
    });

    // The attempt log names each event and its type.
    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(log.map((a) => a.eventId).sort(), r.requests.map((x) => x.webhookId).sort());
    for (const a of log) {
      assert.equal(a.statusCode, 200);
      assert.equal(a.attemptNumber, 1);
      assert.equal(a.nextAttemptAt, null);
      assert.equal(a.eventType, r.requests.find((x) => x.webhookId === a.eventId)!.payload.type);
    }
  });

  test('a delivery taken from the queue comes with its endpoint and event, read by its take; one to an endpoint turned off since comes with nothing, and is not sent', async () => {
    const practice = await svc.newPractice();
    const on = await receiver();
    const off = await receiver();
    const kept = await addEndpoint(svc, practice.practiceId, on, { eventTypes: ['invoice.issued'] });
    const turnedOff = await addEndpoint(svc, practice.practiceId, off, { eventTypes: ['invoice.issued'] });
    await billVisit(svc, practice);
    const disabled = await svc.admin('POST', endpointPath(practice.practiceId, turnedOff.id, '/disable'));
    assert.equal(disabled.status, 200, disabled.text);

    const taken = await takeDueJobs(svc.db, 'wrk_prepared', 10, 60_000, {
      lanes: ['webhooks'],
      prepare: prepareTakenDeliveries,
    });
    assert.equal(taken.length, 2, 'a delivery of invoice.issued to each endpoint');
    const handed = taken.map((job) => handedOverWith(job) as PreparedAttempt | undefined);
    const toKept = handed.find((attempt) => attempt?.endpoint.id === kept.id);
    assert.ok(toKept, 'the delivery to the endpoint still on was handed its attempt');
    assert.equal(toKept.endpoint.url, on.url());
    assert.equal(toKept.event.type, 'invoice.issued');
    assert.equal(handed.filter((attempt) => attempt === undefined).length, 1, 'the other, nothing');

    // Their leases given back, the worker runs them: one send, to the endpoint still on.
    await asOperator(svc.db, (trx) =>
      sql`UPDATE jobs SET locked_by = NULL, locked_until = NULL WHERE practice_id = ${practice.practiceId}`.execute(
        trx,
      ),
    );
    await svc.worker.drain();
    assert.equal(on.requests.length, 1);
    on.assertAllVerified();
    assert.equal(off.requests.length, 0);
  });

  test('each attempt has the same webhook-id and body, a fresh timestamp and a fresh signature', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    r.reply = (request) => (request.n < 3 ? { status: 500, body: 'down' } : { status: 204 });
    const ep = await addEndpoint(svc, practice.practiceId, r, { eventTypes: ['invoice.issued'] });
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1);

    svc.clock.advance(10 * 60_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 2, 'the 5 s retry is due after ten minutes');
    svc.clock.advance(2 * 3600_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 3, 'the 5 min retry is due two hours later');

    r.assertAllVerified();
    const [first, second, third] = r.requests as [
      Receiver['requests'][0],
      Receiver['requests'][0],
      Receiver['requests'][0],
    ];
    for (const request of [second, third]) {
      assert.equal(request.webhookId, first.webhookId, 'webhook-id is the event id on every attempt');
      assert.equal(request.body, first.body, 'the same body on every attempt');
      assert.notEqual(request.headers['webhook-signature'], first.headers['webhook-signature']);
    }
    assert.equal(first.payload.data.id, visit.invoiceId);
    assert.ok(second.timestamp - first.timestamp >= 600 && second.timestamp - first.timestamp <= 605);
    assert.ok(third.timestamp - second.timestamp >= 7200 && third.timestamp - second.timestamp <= 7205);
    // A receiver judging by its own clock would refuse the first attempt's headers by now.
    assert.throws(() => verifyAt(ep.secret, first.body, first.headers, third.at), /too old/);

    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(
      log.map((a) => [a.attemptNumber, a.statusCode, a.eventId]),
      [
        [1, 500, first.webhookId],
        [2, 500, first.webhookId],
        [3, 204, first.webhookId],
      ],
    );
    log.forEach((a, i) => {
      const sentAt = Math.floor(new Date(a.attemptedAt).getTime() / 1000);
      assert.equal(r.requests[i]!.timestamp, sentAt, 'webhook-timestamp is the attempt time');
    });
    const endpoint = await svc.admin('GET', `/practices/${practice.practiceId}/webhook-endpoints/${ep.id}`);
    assert.equal(endpoint.body.failingSince, null);
    assert.ok(endpoint.body.lastSuccessAt);
  });
});
