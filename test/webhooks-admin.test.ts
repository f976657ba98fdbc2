// The operator's webhook endpoint API: registering (the whsec_ secret shown once, never read back),
// listing, reading, changing url and event types, disabling and enabling, rotating the secret (both
// signatures during the overlap, only the new one after), deleting; the event type filter; field
// errors, the admin token and unknown ids. Deliveries go to a real receiver that verifies each one.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { call, describeEachBackend, startService, type TestService } from './harness.ts';
import {
  addEndpoint,
  billVisit,
  endpointPath,
  pay,
  Receiver,
  readEndpoint,
  verifyAt,
} from './webhooks-fixtures.ts';

const OVERLAP_SECONDS = 3600;

describeEachBackend('webhook endpoints admin API', (backend) => {
  let svc: TestService;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await Receiver.forService(svc);
    receivers.push(r);
    return r;
  };

  before(async () => {
    svc = await startService(backend, {
      env: { WEBHOOK_SECRET_OVERLAP_SECONDS: String(OVERLAP_SECONDS) },
    });
  });
  after(async () => {
    await svc.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test('create shows the secret once; list and read never do; update and delete', async () => {
    const { practiceId } = await svc.newPractice();
    const r = await receiver();
    const created = await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, {
      url: r.url(),
    });
    assert.equal(created.status, 201, created.text);
    const secret: string = created.body.secret;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.ok(Buffer.from(secret.slice('whsec_'.length), 'base64').length >= 24, 'a strong secret');
    assert.equal(created.body.url, r.url());
    assert.deepEqual(created.body.eventTypes, []);
    assert.equal(created.body.enabled, true);
    const id: string = created.body.id;
    const secretBody = secret.slice('whsec_'.length);

    const read = await svc.admin('GET', endpointPath(practiceId, id));
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.id, id);
    assert.equal(read.body.url, r.url());
    assert.equal('secret' in read.body, false);
    assert.ok(!read.text.includes(secretBody), 'the secret is never read back');

    const second = await svc.admin('POST', `/practices/${practiceId}/webhook-endpoints`, {
      url: r.url('/other'),
      eventTypes: ['payment.created'],
    });
    assert.equal(second.status, 201, second.text);
    assert.notEqual(second.body.secret, secret, 'each endpoint has its own secret');

    const list = await svc.admin('GET', `/practices/${practiceId}/webhook-endpoints`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((e: { id: string }) => e.id),
      [id, second.body.id],
    );
    for (const e of list.body.data) assert.equal('secret' in e, false);
    assert.ok(!list.text.includes(secretBody) && !list.text.includes(second.body.secret.slice(6)));

    const updated = await svc.admin('PUT', endpointPath(practiceId, id), {
      url: r.url('/moved'),
      eventTypes: ['invoice.issued', 'claim.status_changed'],
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.url, r.url('/moved'));
    assert.deepEqual(updated.body.eventTypes, ['invoice.issued', 'claim.status_changed']);
    assert.equal('secret' in updated.body, false);
    assert.deepEqual((await readEndpoint(svc, practiceId, id)).eventTypes, [
      'invoice.issued',
      'claim.status_changed',
    ]);

    const audit = await svc.admin('GET', `/practices/${practiceId}/audit-events?limit=100`);
    assert.equal(audit.status, 200, audit.text);
    assert.ok(!audit.text.includes(secretBody), 'nor written to the audit log');

    const deleted = await svc.admin('DELETE', endpointPath(practiceId, id));
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { object: 'webhook_endpoint', id, deleted: true });
    assert.equal((await svc.admin('GET', endpointPath(practiceId, id))).status, 404);
    assert.equal((await svc.admin('DELETE', endpointPath(practiceId, id))).status, 404);
    const after = await svc.admin('GET', `/practices/${practiceId}/webhook-endpoints`);
    assert.deepEqual(
      after.body.data.map((e: { id: string }) => e.id),
      [second.body.id],
    );
  });

  test('event types filter deliveries, and an update changes where and what is sent', async () => {
    const practice = await svc.newPractice();
    const all = await receiver();
    const paymentsOnly = await receiver();
    const moved = await receiver();
    await addEndpoint(svc, practice.practiceId, all);
    const narrow = await addEndpoint(svc, practice.practiceId, paymentsOnly, {
      eventTypes: ['payment.created'],
    });

    await billVisit(svc, practice, { claim: true });
    await svc.worker.drain();
    all.assertAllVerified();
    paymentsOnly.assertAllVerified();
    const types = all.requests.map((r) => r.payload.type).sort();
    assert.deepEqual(new Set(types), new Set(['invoice.issued', 'claim.status_changed', 'payment.created']));
    const paymentIds = all.requests
      .filter((r) => r.payload.type === 'payment.created')
      .map((r) => r.webhookId);
    assert.ok(paymentIds.length >= 1);
    assert.deepEqual(
      paymentsOnly.requests.map((r) => r.payload.type),
      paymentIds.map(() => 'payment.created'),
    );
    assert.deepEqual(
      paymentsOnly.requests.map((r) => r.webhookId),
      paymentIds,
      'the filtered endpoint gets exactly the payment events',
    );

    const updated = await svc.admin('PUT', endpointPath(practice.practiceId, narrow.id), {
      url: moved.url(),
      eventTypes: ['invoice.issued'],
    });
    assert.equal(updated.status, 200, updated.text);
    moved.secret = narrow.secret;
    const before = paymentsOnly.requests.length;
    const visit = await billVisit(svc, practice);
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(paymentsOnly.requests.length, before, 'the old url gets nothing after the update');
    assert.deepEqual(
      moved.requests.map((r) => r.payload.type),
      ['invoice.issued'],
    );
    assert.equal(moved.requests[0]!.payload.data.id, visit.invoiceId);
    moved.assertAllVerified();
  });

  test('a disabled endpoint gets nothing; enabled again it gets new events', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const ep = await addEndpoint(svc, practice.practiceId, r);

    const disabled = await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/disable'));
    assert.equal(disabled.status, 200, disabled.text);
    assert.equal(disabled.body.enabled, false);
    assert.equal(typeof disabled.body.disabledReason, 'string');
    const first = await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 0);

    const enabled = await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/enable'));
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(enabled.body.enabled, true);
    assert.equal(enabled.body.disabledReason, null);
    await pay(svc, practice.practiceId, first.invoiceId);
    await svc.worker.drain();
    assert.deepEqual(
      r.requests.map((x) => x.payload.type),
      ['payment.created'],
      'only the event after enabling',
    );
    r.assertAllVerified();
  });

  test('deleting an endpoint drops its pending retries', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    r.reply = () => ({ status: 500 });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1);
    const deleted = await svc.admin('DELETE', endpointPath(practice.practiceId, ep.id));
    assert.equal(deleted.status, 200, deleted.text);
    for (let i = 0; i < 4; i++) {
      svc.clock.advance(3 * 3600_000);
      await svc.worker.drain();
    }
    assert.equal(r.requests.length, 1, 'no retry after the endpoint was deleted');
    const eventId = r.requests[0]!.webhookId;
    const log = await svc.admin('GET', `/practices/${practice.practiceId}/events/${eventId}/deliveries`);
    assert.equal(log.status, 200, log.text);
    assert.deepEqual(log.body.data, [], 'its delivery log went with it');
  });

  test('rotation: both signatures verify during the overlap, only the new one after it', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const oldSecret = ep.secret;

    const rotated = await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/rotate-secret'));
    assert.equal(rotated.status, 200, rotated.text);
    const newSecret: string = rotated.body.secret;
    assert.match(newSecret, /^whsec_/);
    assert.notEqual(newSecret, oldSecret);
    const read = await svc.admin('GET', endpointPath(practice.practiceId, ep.id));
    assert.equal('secret' in read.body, false);
    assert.ok(!read.text.includes(newSecret.slice(6)));
    r.secret = newSecret;

    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1);
    const during = r.requests[0]!;
    assert.equal(during.signatures.length, 2, `two signatures: ${during.headers['webhook-signature']}`);
    assert.match(String(during.headers['webhook-signature']), /^v1,\S+ v1,\S+$/);
    assert.ok(verifyAt(newSecret, during.body, during.headers, during.at));
    assert.ok(verifyAt(oldSecret, during.body, during.headers, during.at));

    svc.clock.advance((OVERLAP_SECONDS + 1) * 1000);
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(r.requests.length, 2);
    const afterOverlap = r.requests[1]!;
    assert.equal(afterOverlap.signatures.length, 1, String(afterOverlap.headers['webhook-signature']));
    assert.ok(verifyAt(newSecret, afterOverlap.body, afterOverlap.headers, afterOverlap.at));
    assert.throws(
      () => verifyAt(oldSecret, afterOverlap.body, afterOverlap.headers, afterOverlap.at),
      /No matching signature/,
    );
    r.assertAllVerified();
  });

  test('field errors: unknown event type names eventTypes.N, a bad url names url', async () => {
    const { practiceId } = await svc.newPractice();
    const r = await receiver();
    const path = `/practices/${practiceId}/webhook-endpoints`;
    const fields = (body: { errors?: Array<{ field: string }> }) => (body.errors ?? []).map((e) => e.field);

    const badType = await svc.admin('POST', path, {
      url: r.url(),
      eventTypes: ['invoice.issued', 'invoice.exploded'],
    });
    assert.equal(badType.status, 422, badType.text);
    assert.equal(badType.body.code, 'validation_failed');
    assert.deepEqual(fields(badType.body), ['eventTypes.1']);

    for (const url of [
      'not a url',
      'ftp://example.com/hook',
      '/relative/hook',
      'https://user:pw@example.com/',
    ]) {
      const bad = await svc.admin('POST', path, { url });
      assert.equal(bad.status, 422, `${url}: ${bad.text}`);
      assert.equal(bad.body.code, 'validation_failed');
      assert.deepEqual(fields(bad.body), ['url'], url);
    }

    const ep = await addEndpoint(svc, practiceId, r);
    const badUpdateUrl = await svc.admin('PUT', endpointPath(practiceId, ep.id), {
      url: 'ftp://example.com/hook',
      eventTypes: ['payment.created'],
    });
    assert.equal(badUpdateUrl.status, 422, badUpdateUrl.text);
    assert.deepEqual(fields(badUpdateUrl.body), ['url']);
    const badUpdateType = await svc.admin('PUT', endpointPath(practiceId, ep.id), {
      url: r.url('/elsewhere'),
      eventTypes: ['payment.created', 'claim.created', 'nope'],
    });
    assert.equal(badUpdateType.status, 422, badUpdateType.text);
    assert.deepEqual(fields(badUpdateType.body), ['eventTypes.1', 'eventTypes.2']);
    assert.equal((await readEndpoint(svc, practiceId, ep.id)).url, r.url(), 'nothing changed');
    const list = await svc.admin('GET', path);
    assert.equal(list.body.data.length, 1, 'refused registrations made no endpoint');
  });

  test('a wrong or missing admin token answers 401', async () => {
    const { practiceId } = await svc.newPractice();
    const path = `/admin/v1/practices/${practiceId}/webhook-endpoints`;
    for (const token of ['adm_wrong_token', undefined]) {
      const list = await call(svc.baseUrl, 'GET', path, token ? { token } : {});
      assert.equal(list.status, 401, list.text);
      assert.equal(list.body.code, 'unauthenticated');
      const create = await call(svc.baseUrl, 'POST', path, {
        ...(token ? { token } : {}),
        body: { url: 'https://example.com/hook' },
      });
      assert.equal(create.status, 401, create.text);
    }
    const list = await svc.admin('GET', `/practices/${practiceId}/webhook-endpoints`);
    assert.deepEqual(list.body.data, []);
  });

  test('unknown practices, endpoints and events answer 404; so do another practice’s', async () => {
    const mine = await svc.newPractice();
    const theirs = await svc.newPractice();
    const r = await receiver();
    const theirEndpoint = await addEndpoint(svc, theirs.practiceId, r);
    const url = r.url();

    const notFound = async (method: string, path: string, body?: unknown) => {
      const answer = await svc.admin(method, path, body);
      assert.equal(answer.status, 404, `${method} ${path}: ${answer.text}`);
      assert.equal(answer.body.code, 'not_found');
    };
    await notFound('GET', '/practices/org_doesnotexist/webhook-endpoints');
    await notFound('POST', '/practices/org_doesnotexist/webhook-endpoints', { url });
    for (const eid of ['whe_doesnotexist', theirEndpoint.id]) {
      const base = endpointPath(mine.practiceId, eid);
      await notFound('GET', base);
      await notFound('PUT', base, { url });
      await notFound('DELETE', base);
      await notFound('POST', `${base}/disable`);
      await notFound('POST', `${base}/enable`);
      await notFound('POST', `${base}/rotate-secret`);
      await notFound('GET', `${base}/deliveries`);
      await notFound('POST', `${base}/recover`, { since: new Date().toISOString() });
    }
    await notFound('GET', `/practices/${mine.practiceId}/events/evt_doesnotexist/deliveries`);
    await notFound('POST', `/practices/${mine.practiceId}/events/evt_doesnotexist/redeliver`);

    // Another practice's event is as unknown as one that does not exist.
    const visit = await billVisit(svc, theirs);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1);
    const eventId = r.requests[0]!.webhookId;
    assert.equal(r.requests[0]!.payload.data.id, visit.invoiceId);
    await notFound('GET', `/practices/${mine.practiceId}/events/${eventId}/deliveries`);
    await notFound('POST', `/practices/${mine.practiceId}/events/${eventId}/redeliver`);
    assert.equal((await readEndpoint(svc, theirs.practiceId, theirEndpoint.id)).enabled, true);
  });
});
