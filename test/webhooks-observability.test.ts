// What the operator sees and can do about deliveries: an event's attempts to every endpoint, a manual
// redelivery (a new delivery, the same webhook-id), and recovering everything that failed since a
// time once the endpoint is on again (refused while it is off).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import {
  addEndpoint,
  advanceTo,
  attempts,
  billVisit,
  endpointPath,
  pay,
  Receiver,
  verifyAt,
} from './webhooks-fixtures.ts';

describeEachBackend('webhook delivery log, redelivery and recovery', (backend) => {
  let svc: TestService;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await Receiver.forService(svc);
    receivers.push(r);
    return r;
  };
  const eventAttempts = async (practiceId: string, eventId: string) => {
    const answer = await svc.admin('GET', `/practices/${practiceId}/events/${eventId}/deliveries`);
    assert.equal(answer.status, 200, answer.text);
    // biome-ignore lint/suspicious/noExplicitAny: attempt entries as answered
    return answer.body.data as any[];
  };

  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test("an event's deliveries list its attempts to every endpoint, oldest first", async () => {
    const practice = await svc.newPractice();
    const ok = await receiver();
    const failing = await receiver();
    failing.reply = () => ({ status: 503, body: 'busy' });
    const epOk = await addEndpoint(svc, practice.practiceId, ok);
    const epFailing = await addEndpoint(svc, practice.practiceId, failing);
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    svc.clock.advance(6_000);
    await svc.worker.drain();
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();

    const eventId = ok.requests[0]!.webhookId;
    assert.equal(ok.requests[0]!.payload.type, 'invoice.issued');
    const list = await eventAttempts(practice.practiceId, eventId);
    assert.equal(list.length, 3, JSON.stringify(list));
    for (const a of list) {
      assert.equal(a.eventId, eventId, 'only this event');
      assert.equal(a.eventType, 'invoice.issued');
    }
    const times = list.map((a) => new Date(a.attemptedAt).getTime());
    assert.deepEqual(
      times,
      [...times].sort((x, y) => x - y),
      'oldest first',
    );
    const okAttempts = list.filter((a) => a.endpointId === epOk.id);
    const failed = list.filter((a) => a.endpointId === epFailing.id);
    assert.deepEqual(
      okAttempts.map((a) => [a.attemptNumber, a.statusCode, a.nextAttemptAt]),
      [[1, 200, null]],
    );
    assert.deepEqual(
      failed.map((a) => [a.attemptNumber, a.statusCode, a.responseBody]),
      [
        [1, 503, 'busy'],
        [2, 503, 'busy'],
      ],
    );
    assert.ok(failed[1].nextAttemptAt);
    assert.equal(new Set(failed.map((a) => a.deliveryId)).size, 1, 'retries of one delivery');
    ok.assertAllVerified();
    failing.assertAllVerified();
  });

  test('redeliver queues a new delivery of the same event, sent with the same webhook-id', async () => {
    const practice = await svc.newPractice();
    const one = await receiver();
    const two = await receiver();
    const epOne = await addEndpoint(svc, practice.practiceId, one);
    const epTwo = await addEndpoint(svc, practice.practiceId, two);
    await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(one.requests.length, 1);
    const eventId = one.requests[0]!.webhookId;
    const path = `/practices/${practice.practiceId}/events/${eventId}/redeliver`;

    svc.clock.advance(60_000);
    const again = await svc.admin('POST', path);
    assert.equal(again.status, 202, again.text);
    assert.equal(again.body.object, 'redelivery');
    assert.equal(again.body.queued, 2, 'to every endpoint that takes the event');
    await svc.worker.drain();
    assert.equal(one.requests.length, 2);
    assert.equal(two.requests.length, 2);
    const [original, repeat] = one.requests as [(typeof one.requests)[0], (typeof one.requests)[0]];
    assert.equal(repeat.webhookId, eventId, 'the same webhook-id, so the receiver can ignore it');
    assert.equal(repeat.body, original.body);
    assert.ok(repeat.timestamp >= original.timestamp + 60, 'signed afresh');
    one.assertAllVerified();
    two.assertAllVerified();

    const onlyTwo = await svc.admin('POST', path, { endpointId: epTwo.id });
    assert.equal(onlyTwo.status, 202, onlyTwo.text);
    assert.equal(onlyTwo.body.queued, 1);
    await svc.worker.drain();
    assert.equal(one.requests.length, 2);
    assert.deepEqual(
      two.requests.map((r) => r.webhookId),
      [eventId, eventId, eventId],
    );

    const list = await eventAttempts(practice.practiceId, eventId);
    const toOne = list.filter((a) => a.endpointId === epOne.id);
    assert.deepEqual(
      toOne.map((a) => [a.attemptNumber, a.statusCode]),
      [
        [1, 200],
        [1, 200],
      ],
    );
    assert.equal(new Set(toOne.map((a) => a.deliveryId)).size, 2, 'a new delivery each time');
    assert.equal(list.length, 5);

    const off = await svc.admin('POST', endpointPath(practice.practiceId, epTwo.id, '/disable'));
    assert.equal(off.status, 200);
    const refused = await svc.admin('POST', path, { endpointId: epTwo.id });
    assert.equal(refused.status, 422, refused.text);
    const toEnabled = await svc.admin('POST', path);
    assert.equal(toEnabled.body.queued, 1, 'a disabled endpoint is skipped');
  });

  test('recover re-queues what failed since a time, once the endpoint is on again', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    let status = 500;
    r.reply = () => ({ status });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const since = svc.clock.now().toISOString();
    svc.clock.advance(1_000);

    // E1 fails all 8 attempts.
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    for (;;) {
      const next = (await attempts(svc, practice.practiceId, ep.id)).at(-1)!.nextAttemptAt;
      if (!next) break;
      advanceTo(svc, next);
      await svc.worker.drain();
    }
    assert.equal(r.requests.length, 8);
    const e1 = r.requests[0]!.webhookId;

    // E2 fails once, then the operator turns the endpoint off and its retry is dropped.
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(r.requests.length, 9);
    const e2 = r.requests[8]!.webhookId;
    assert.notEqual(e2, e1);
    const recoverPath = endpointPath(practice.practiceId, ep.id, '/recover');
    assert.equal((await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/disable'))).status, 200);
    const whileOff = await svc.admin('POST', recoverPath, { since });
    assert.equal(whileOff.status, 422, whileOff.text);
    assert.equal(whileOff.body.code, 'business_rule');
    svc.clock.advance(10_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 9, 'no retries while off');

    // E3 happens while it is off: never queued for it, so not recovered.
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(r.requests.length, 9);

    assert.equal((await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/enable'))).status, 200);
    status = 200;
    const none = await svc.admin('POST', recoverPath, { since: svc.clock.now().toISOString() });
    assert.equal(none.status, 202, none.text);
    assert.equal(none.body.queued, 0, 'nothing failed after now');
    const recovered = await svc.admin('POST', recoverPath, { since });
    assert.equal(recovered.status, 202, recovered.text);
    assert.equal(recovered.body.queued, 2);
    await svc.worker.drain();
    assert.deepEqual(
      r.requests
        .slice(9)
        .map((x) => x.webhookId)
        .sort(),
      [e1, e2].sort(),
    );
    for (const x of r.requests.slice(9)) assert.ok(verifyAt(ep.secret, x.body, x.headers, x.at));
    r.assertAllVerified();

    const twice = await svc.admin('POST', recoverPath, { since });
    assert.equal(twice.body.queued, 0, 'what was delivered is not recovered again');
    const e1Log = await eventAttempts(practice.practiceId, e1);
    assert.deepEqual(
      e1Log.map((a) => a.statusCode),
      [500, 500, 500, 500, 500, 500, 500, 500, 200],
    );
  });

  test('a successful manual redelivery cancels the automatic retry still waiting for that event', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    let status = 503;
    r.reply = () => ({ status });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    await billVisit(svc, practice);
    await svc.worker.drain();
    svc.clock.advance(6_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 2, 'the first attempt and the 5-second retry failed');
    const eventId = r.requests[0]!.webhookId;
    const waiting = (await attempts(svc, practice.practiceId, ep.id)).at(-1)!.nextAttemptAt;
    assert.ok(waiting, 'an automatic retry waits');

    status = 200;
    const again = await svc.admin('POST', `/practices/${practice.practiceId}/events/${eventId}/redeliver`);
    assert.equal(again.status, 202, again.text);
    await svc.worker.drain();
    assert.equal(r.requests.length, 3, 'the manual redelivery was sent');

    advanceTo(svc, waiting);
    svc.clock.advance(3_600_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 3, 'the retry that waited is not sent after the redelivery succeeded');
    const log = await eventAttempts(practice.practiceId, eventId);
    assert.deepEqual(
      log.map((a) => a.statusCode),
      [503, 503, 200],
    );
  });

  test('recover also takes deliveries still retrying, and says how many of each kind it queued', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    let status = 500;
    r.reply = () => ({ status });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const since = svc.clock.now().toISOString();
    svc.clock.advance(1_000);

    // E1 uses up its 8 attempts.
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    for (;;) {
      const next = (await attempts(svc, practice.practiceId, ep.id)).at(-1)!.nextAttemptAt;
      if (!next) break;
      advanceTo(svc, next);
      await svc.worker.drain();
    }
    const e1 = r.requests[0]!.webhookId;
    // E2 fails once and waits for its retry.
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(r.requests.length, 9);
    const e2 = r.requests[8]!.webhookId;

    const recoverPath = endpointPath(practice.practiceId, ep.id, '/recover');
    const onlyFailed = await svc.admin('POST', recoverPath, { since, includeRetrying: false });
    assert.equal(onlyFailed.status, 202, onlyFailed.text);
    assert.deepEqual(
      [onlyFailed.body.queued, onlyFailed.body.failed, onlyFailed.body.retrying],
      [1, 1, 0],
      'without the retrying ones, only the event whose retries are used up',
    );
    status = 200;
    await svc.worker.drain();
    assert.deepEqual(
      r.requests.slice(9).map((x) => x.webhookId),
      [e1],
    );

    const both = await svc.admin('POST', recoverPath, { since });
    assert.equal(both.status, 202, both.text);
    assert.deepEqual([both.body.queued, both.body.failed, both.body.retrying], [1, 0, 1]);
    await svc.worker.drain();
    assert.deepEqual(
      r.requests.slice(10).map((x) => x.webhookId),
      [e2],
      'the event still retrying is delivered now',
    );
    svc.clock.advance(24 * 3_600_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 11, 'and its automatic retry is not sent as well');
    const twice = await svc.admin('POST', recoverPath, { since });
    assert.deepEqual([twice.body.queued, twice.body.failed, twice.body.retrying], [0, 0, 0]);
    r.assertAllVerified();
  });

  test('a recovery takes the place of the retry still waiting: a receiver still down gets one schedule', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    r.reply = () => ({ status: 500 });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const since = svc.clock.now().toISOString();
    svc.clock.advance(1_000);
    await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1, 'the first attempt failed and a retry waits 5 seconds');
    const eventId = r.requests[0]!.webhookId;

    svc.clock.advance(2_000);
    const recovered = await svc.admin('POST', endpointPath(practice.practiceId, ep.id, '/recover'), {
      since,
    });
    assert.equal(recovered.status, 202, recovered.text);
    assert.deepEqual([recovered.body.queued, recovered.body.retrying], [1, 1]);
    await svc.worker.drain();
    assert.equal(r.requests.length, 2, 'the recovered delivery was sent, and failed too');

    // The replaced retry was due 3 s from here, the recovered delivery's own 5 s from here.
    svc.clock.advance(6_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 3, 'one retry, not one for each delivery');
    assert.deepEqual(
      r.requests.map((x) => x.webhookId),
      [eventId, eventId, eventId],
    );
  });
});
