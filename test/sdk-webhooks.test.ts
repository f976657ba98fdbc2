// client.webhooks.verify on real deliveries from the service, on both databases: the exact bytes as
// received verify (as a string, a Buffer, bytes or with fetch Headers) and answer the event typed;
// changed bytes, another secret or a parsed object are refused. The package verifies with the
// runtime's own crypto (no dependency); what the Standard Webhooks library signs, it verifies: either
// of a rotation's two signatures, within five minutes either way.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { verifyWebhook, WebhookVerificationError } from '@practice-billing/client';
import { Webhook } from 'standardwebhooks';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { sdkClient } from './sdk-fixtures.ts';
import { addEndpoint, asOf, billVisit, Receiver } from './webhooks-fixtures.ts';

describeEachBackend('client package webhook verification', (backend) => {
  let svc: TestService;
  let receiver: Receiver;
  before(async () => {
    svc = await startService(backend);
    receiver = await Receiver.forService(svc);
  });
  after(async () => {
    await receiver.close();
    await svc.close();
  });

  test('a delivery verifies from its raw body and headers; anything else is refused', async () => {
    const practice = await svc.newPractice();
    const endpoint = await addEndpoint(svc, practice.practiceId, receiver, {
      eventTypes: ['invoice.issued'],
    });
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    const [delivery] = receiver.hits();
    assert.ok(delivery, 'the service delivered invoice.issued');
    const sdk = sdkClient(svc.baseUrl, practice.key);
    // Timestamps are judged by the service's clock, which a test may have started at another time.
    const client = {
      ...sdk,
      webhooks: {
        verify: (...args: Parameters<typeof sdk.webhooks.verify>) =>
          asOf(svc.clock.now().getTime(), () => sdk.webhooks.verify(...args)),
      },
    };

    const event = client.webhooks.verify(delivery.body, delivery.headers, endpoint.secret);
    assert.equal(event.type, 'invoice.issued');
    assert.equal(event.data.id, visit.invoiceId);
    assert.equal(event.id, delivery.headers['webhook-id']);
    assert.deepEqual(event, delivery.payload);
    assert.deepEqual(
      client.webhooks.verify(Buffer.from(delivery.body), delivery.headers, endpoint.secret),
      event,
    );
    assert.deepEqual(
      client.webhooks.verify(new TextEncoder().encode(delivery.body), delivery.headers, endpoint.secret),
      event,
    );
    const fetchHeaders = new Headers();
    for (const [name, value] of Object.entries(delivery.headers)) {
      if (typeof value === 'string') fetchHeaders.set(name, value);
    }
    assert.deepEqual(client.webhooks.verify(delivery.body, fetchHeaders, endpoint.secret), event);

    // the event read back with the key names the same invoice
    const invoice = await client.invoices.get(event.data.id);
    assert.equal(invoice.status, 'issued');

    const reserialised = JSON.stringify(JSON.parse(delivery.body), null, 1);
    assert.throws(
      () => client.webhooks.verify(reserialised, delivery.headers, endpoint.secret),
      WebhookVerificationError,
    );
    const other = await addEndpoint(svc, practice.practiceId, receiver, {
      eventTypes: ['payment.created'],
    });
    assert.throws(
      () => client.webhooks.verify(delivery.body, delivery.headers, other.secret),
      WebhookVerificationError,
    );
    assert.throws(
      () =>
        client.webhooks.verify(
          delivery.body,
          { ...delivery.headers, 'webhook-id': 'evt_other' },
          endpoint.secret,
        ),
      WebhookVerificationError,
    );
    assert.throws(
      () => client.webhooks.verify(delivery.payload, delivery.headers, endpoint.secret),
      (error: unknown) => error instanceof TypeError && /raw request body/.test(error.message),
    );
  });

  test('what the Standard Webhooks library signs verifies: either of two signatures, within five minutes', () => {
    const current = `whsec_${Buffer.from('current secret of 32 bytes......').toString('base64')}`;
    const previous = `whsec_${Buffer.from('previous secret of 32 bytes.....').toString('base64')}`;
    const body = JSON.stringify({
      id: 'evt_1',
      type: 'payment.created',
      occurredAt: '2026-03-10T08:00:00.000Z',
      data: {
        object: 'invoice',
        id: 'inv_1',
        url: null,
        payment: { id: 'pay_1', amount: 100, currency: 'ZAR', source: 'patient' },
      },
    });
    const sentAt = new Date('2026-03-10T08:00:00Z');
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(sentAt.getTime() / 1000),
      'webhook-signature': [previous, current]
        .map((s) => new Webhook(s).sign('evt_1', sentAt, body))
        .join(' '),
    };
    for (const secret of [current, previous]) {
      const event = asOf(sentAt.getTime() + 299_000, () => verifyWebhook(body, headers, secret));
      assert.equal(event.type, 'payment.created');
      if (event.type === 'payment.created') assert.equal(event.data.payment?.id, 'pay_1');
    }
    const other = `whsec_${Buffer.from('another secret of 32 bytes......').toString('base64')}`;
    assert.throws(
      () => asOf(sentAt.getTime(), () => verifyWebhook(body, headers, other)),
      WebhookVerificationError,
    );
    assert.throws(
      () => asOf(sentAt.getTime() + 301_000, () => verifyWebhook(body, headers, current)),
      /too old/,
    );
    assert.throws(
      () => asOf(sentAt.getTime() - 301_000, () => verifyWebhook(body, headers, current)),
      /too new/,
    );
    assert.throws(
      () => verifyWebhook(body, { ...headers, 'webhook-signature': undefined }, current),
      WebhookVerificationError,
    );
  });
});
