// GET /events and GET /events/{id}: every event of the practice, oldest first, with the very body its
// webhook deliveries carried; `type` (repeatable), `createdSince`, `after` (the id of the last event
// received) and signed cursors; other practices' events never seen; 30 days kept. Driven through the
// client package as an integrator would, on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Event, type PageList, ProblemError } from '@practice-billing/client';
import { DAY } from './billing-fixtures.ts';
import { apiClient, describeEachBackend, startService, type TestService } from './harness.ts';
import { sdkClient } from './sdk-fixtures.ts';
import { addEndpoint, billVisit, pay, Receiver, sleep } from './webhooks-fixtures.ts';

describeEachBackend('events list', (backend) => {
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

  const types = (events: Event[]) => events.map((e) => e.type);

  /**
   * The list once it shows at least `count` events. A commit is listed once the feed's safe
   * high-water mark has passed its stamp, which a reader sees within a read or two, not at once.
   */
  async function listed(list: () => PageList<Event>, count: number): Promise<Event[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const events = await list().toArray();
      if (events.length >= count || Date.now() > deadline) return events;
      await sleep(20);
    }
  }

  test('every event, oldest first, with the body its webhook carried; one by id', async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    await billVisit(svc, other, { claim: true });
    receiver.requests.length = 0;
    await addEndpoint(svc, practice.practiceId, receiver);
    const visit = await billVisit(svc, practice, { claim: true });
    await svc.worker.drain();
    const client = sdkClient(svc.baseUrl, practice.key);
    const events = await listed(() => client.events.list(), 4);
    assert.deepEqual(types(events), [
      'invoice.issued',
      'claim.status_changed',
      'claim.status_changed',
      'payment.created',
    ]);
    for (const event of events) assert.equal(event.data.id, visit.invoiceId);
    const delivered = new Map(receiver.hits().map((r) => [r.payload.id as string, r.payload]));
    assert.equal(delivered.size, events.length);
    for (const event of events)
      assert.deepEqual(event, delivered.get(event.id), 'the same body as the webhook');
    assert.deepEqual(await client.events.get(events[1]!.id), events[1]);
    // another practice's event answers as one that does not exist
    const theirs = await listed(() => sdkClient(svc.baseUrl, other.key).events.list(), 1);
    const foreign = await client.events.get(theirs[0]!.id).catch((e: unknown) => e);
    assert.ok(foreign instanceof ProblemError);
    assert.equal(foreign.status, 404);
  });

  test('a payment and a refund recorded by the integration: delivered and listed with which payment and refund', async () => {
    const practice = await svc.newPractice();
    await addEndpoint(svc, practice.practiceId, receiver);
    const visit = await billVisit(svc, practice);
    const client = sdkClient(svc.baseUrl, practice.key);
    const payment = await client.invoices.recordPayment(visit.invoiceId, { amount: 3000, method: 'card' });
    const refund = await client.invoices.recordRefund(visit.invoiceId, {
      amount: 1000,
      method: 'card',
      reason: 'Overcharged',
    });
    receiver.requests.length = 0;
    await svc.worker.drain();
    const events = await listed(() => client.events.list({ type: ['payment.created', 'refund.created'] }), 2);
    assert.deepEqual(types(events), ['payment.created', 'refund.created']);
    const [paid, refunded] = events;
    assert.ok(paid?.type === 'payment.created' && refunded?.type === 'refund.created');
    assert.deepEqual(paid.data.payment, { id: payment.id, amount: 3000, currency: 'ZAR', source: 'patient' });
    assert.deepEqual(refunded.data.refund, { id: refund.id, amount: 1000, currency: 'ZAR' });
    assert.equal(refunded.data.id, visit.invoiceId);
    const delivered = new Map(receiver.hits().map((r) => [r.payload.id as string, r.payload]));
    for (const event of events)
      assert.deepEqual(delivered.get(event.id), event, 'the same body as the webhook');
  });

  test('type (repeatable), createdSince, after and paging', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const first = await billVisit(svc, practice);
    await billVisit(svc, practice, { claim: true });
    await svc.worker.drain();
    const all = await listed(() => client.events.list(), 5);
    assert.deepEqual(types(all), [
      'invoice.issued',
      'invoice.issued',
      'claim.status_changed',
      'claim.status_changed',
      'payment.created',
    ]);

    assert.deepEqual(types(await client.events.list({ type: ['payment.created'] }).toArray()), [
      'payment.created',
    ]);
    const two = await client.events.list({ type: ['payment.created', 'invoice.issued'] }).toArray();
    assert.deepEqual(types(two), ['invoice.issued', 'invoice.issued', 'payment.created']);
    const raw = await apiClient(svc, practice.key)('GET', '/events?type=invoice.issued&type=payment.created');
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(raw.body.data, two);

    // after: the events that follow the one named; from the last one, nothing yet
    assert.deepEqual(await client.events.list({ after: all[1]!.id }).toArray(), all.slice(2));
    assert.deepEqual(await client.events.list({ after: all[4]!.id }).toArray(), []);
    await pay(svc, practice.practiceId, first.invoiceId, 1);
    const next = await listed(() => client.events.list({ after: all[4]!.id }), 1);
    assert.deepEqual(types(next), ['payment.created']);

    // createdSince: events recorded at or after that time (the database's clock, not the body's)
    await sleep(5);
    const mark = new Date();
    await sleep(5);
    await pay(svc, practice.practiceId, first.invoiceId, 1);
    const since = await listed(() => client.events.list({ createdSince: mark.toISOString() }), 1);
    assert.deepEqual(types(since), ['payment.created']);
    assert.notEqual(since[0]!.id, next[0]!.id);

    // pages of two, following the signed cursor; the same events in the same order
    const pages: number[] = [];
    const paged: Event[] = [];
    for await (const page of client.events.list({ limit: 2 }).pages()) {
      pages.push(page.data.length);
      paged.push(...page.data);
    }
    assert.deepEqual(pages, [2, 2, 2, 1]);
    assert.deepEqual(paged, await listed(() => client.events.list(), 7));
  });

  test('bad parameters are 400 naming them; a cursor of other filters is invalid_cursor', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    await billVisit(svc, practice, { claim: true });
    await svc.worker.drain();
    await listed(() => sdkClient(svc.baseUrl, practice.key).events.list(), 4);
    for (const [query, field] of [
      ['type=invoice.paid', 'type'],
      ['createdSince=yesterday', 'createdSince'],
      ['after=evt_doesnotexist0000000000', 'after'],
      ['limit=0', 'limit'],
      ['colour=red', 'colour'],
    ] as const) {
      const answer = await api('GET', `/events?${query}`);
      assert.equal(answer.status, 400, `${query}: ${answer.text}`);
      assert.equal(answer.body.code, 'invalid_request', query);
      assert.deepEqual(
        answer.body.errors.map((e: { field: string }) => e.field),
        [field],
        `${query}: ${answer.text}`,
      );
    }
    const page = await api('GET', '/events?limit=1');
    assert.equal(page.body.hasMore, true);
    const cursor = encodeURIComponent(page.body.nextCursor);
    const other = await api('GET', `/events?limit=1&type=invoice.issued&cursor=${cursor}`);
    assert.equal(other.status, 400);
    assert.equal(other.body.code, 'invalid_cursor');
    assert.equal((await api('GET', `/events?limit=1&cursor=${cursor}`)).status, 200);
  });

  test('events are kept 30 days: older ones are neither listed nor read, and after one is refused', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const visit = await billVisit(svc, practice);
    const [issued] = await listed(() => client.events.list(), 1);
    assert.ok(issued);
    svc.clock.advance(29 * DAY);
    await pay(svc, practice.practiceId, visit.invoiceId, 1);
    assert.equal((await listed(() => client.events.list(), 2)).length, 2);
    svc.clock.advance(2 * DAY);
    const kept = await client.events.list().toArray();
    assert.deepEqual(types(kept), ['payment.created']);
    const gone = await client.events.get(issued.id).catch((e: unknown) => e);
    assert.ok(gone instanceof ProblemError);
    assert.equal(gone.status, 404);
    const stale = await client.events
      .list({ after: issued.id })
      .page()
      .catch((e: unknown) => e);
    assert.ok(stale instanceof ProblemError);
    assert.equal(stale.status, 400);
  });
});
