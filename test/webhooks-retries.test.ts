// Retries with the service clock: 8 attempts in all, at 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h
// after each failure plus up to 20% jitter (the harness pins the jitter at +10%), logged with status,
// duration, the start of the answer and the next attempt; a redirect is a failure and is not
// followed; 410 turns the endpoint off at once; three days of failures since the last success turn
// it off (not a minute sooner) with a notification and an audit event; a success resets the streak.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import {
  addEndpoint,
  advanceTo,
  attempts,
  billVisit,
  endpointPath,
  notificationsOf,
  pay,
  Receiver,
  readEndpoint,
} from './webhooks-fixtures.ts';

const SCHEDULE_MS = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];
const DAY = 24 * 3600_000;

describeEachBackend('webhook retries', (backend) => {
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

  test('a failing receiver gets exactly 8 attempts on the schedule, each logged', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const answer = 'x'.repeat(5 * 1024);
    r.reply = (request) => ({ status: 500, body: answer, ...(request.n === 1 ? { delayMs: 50 } : {}) });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1, 'the first attempt is made at once');

    for (let n = 2; n <= 8; n++) {
      const log = await attempts(svc, practice.practiceId, ep.id);
      const next = log.at(-1)!.nextAttemptAt;
      assert.ok(next, `attempt ${n - 1} names the next attempt`);
      svc.clock.advance(new Date(next).getTime() - svc.clock.now().getTime() - 1_000);
      await svc.worker.drain();
      assert.equal(r.requests.length, n - 1, `attempt ${n} is not made before its time`);
      advanceTo(svc, next);
      await svc.worker.drain();
      assert.equal(r.requests.length, n, `attempt ${n} is made when due`);
    }
    svc.clock.advance(DAY);
    await svc.worker.drain();
    svc.clock.advance(DAY);
    await svc.worker.drain();
    assert.equal(r.requests.length, 8, 'no 9th attempt');
    r.assertAllVerified();
    assert.equal(r.uniqueIds().size, 1);
    assert.equal(r.requests[0]!.payload.data.id, visit.invoiceId);

    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(
      log.map((a) => a.attemptNumber),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    const times = log.map((a) => new Date(a.attemptedAt).getTime());
    for (let i = 1; i < 8; i++) {
      const gap = times[i]! - times[i - 1]!;
      const delay = SCHEDULE_MS[i - 1]!;
      assert.ok(
        gap >= delay && gap <= delay * 1.2,
        `attempt ${i + 1} came ${gap} ms after ${i}; delay ${delay}`,
      );
      const planned = new Date(log[i - 1].nextAttemptAt).getTime() - times[i - 1]!;
      assert.ok(planned >= delay && planned <= delay * 1.2, `planned ${planned} ms for delay ${delay}`);
    }
    for (const [i, a] of log.entries()) {
      assert.equal(a.eventId, r.requests[0]!.webhookId);
      assert.equal(a.eventType, 'invoice.issued');
      assert.equal(a.statusCode, 500);
      assert.ok(Number.isInteger(a.durationMs) && a.durationMs >= 0);
      assert.equal(typeof a.responseBody, 'string');
      assert.ok(a.responseBody.length > 0 && a.responseBody.length <= 1024, `kept ${a.responseBody.length}`);
      assert.ok(answer.startsWith(a.responseBody), 'the start of what the receiver answered');
      assert.equal(a.nextAttemptAt === null, i === 7, 'only the last attempt has no next one');
      assert.equal(r.requests[i]!.webhookId, a.eventId);
      assert.equal(r.requests[i]!.timestamp, Math.floor(times[i]! / 1000));
    }
    assert.ok(log[0].durationMs >= 45, `the slow first answer took ${log[0].durationMs} ms`);
    const endpoint = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(endpoint.enabled, true, 'about 30 hours of failures does not turn it off');
    assert.ok(endpoint.failingSince);
  });

  test('a redirect is a failure and is not followed', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const codes = [302, 307, 301];
    r.reply = (request) =>
      request.path === '/hook'
        ? { status: codes[(request.n - 1) % 3]!, headers: { location: r.url('/elsewhere') } }
        : { status: 200 };
    const ep = await addEndpoint(svc, practice.practiceId, r);
    await billVisit(svc, practice);
    await svc.worker.drain();
    svc.clock.advance(6_000);
    await svc.worker.drain();
    svc.clock.advance(6 * 60_000);
    await svc.worker.drain();

    assert.equal(r.hits('/elsewhere').length, 0, 'the redirect target is never requested');
    assert.equal(r.hits('/hook').length, 3);
    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(
      log.map((a) => a.statusCode),
      codes,
    );
    for (const a of log) assert.ok(a.nextAttemptAt, 'a redirect is retried like any failure');
    const endpoint = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(endpoint.lastSuccessAt, null);
    assert.ok(endpoint.failingSince);
  });

  test('410 Gone turns the endpoint off at once; later events are not sent to it', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    r.reply = () => ({ status: 410, body: 'gone' });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1);

    const endpoint = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(endpoint.enabled, false);
    assert.match(endpoint.disabledReason, /410/);
    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(
      log.map((a) => [a.statusCode, a.nextAttemptAt]),
      [[410, null]],
    );

    svc.clock.advance(DAY);
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1, 'no retry and no later event');
    assert.equal((await attempts(svc, practice.practiceId, ep.id)).length, 1);
  });

  test('three days of failures since the last success turn the endpoint off, not a minute sooner', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    let status = 200;
    r.reply = () => ({ status });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    const succeeded = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.ok(succeeded.lastSuccessAt);
    assert.equal(succeeded.failingSince, null);

    // A quiet day, then every attempt fails.
    svc.clock.advance(DAY);
    status = 500;
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    const failing = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.ok(failing.failingSince, 'the failure streak starts');
    assert.equal(failing.lastSuccessAt, succeeded.lastSuccessAt);
    const since = new Date(failing.failingSince).getTime();
    assert.ok(since > new Date(succeeded.lastSuccessAt).getTime() + DAY - 1_000);

    // Just before three days: another event fails, the endpoint stays on.
    advanceTo(svc, new Date(since + 3 * DAY - 60_000));
    await pay(svc, practice.practiceId, visit.invoiceId);
    const seen = r.requests.length;
    await svc.worker.drain();
    assert.ok(r.requests.length > seen, 'attempts were made just before three days');
    const before = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(before.enabled, true, 'not turned off a minute before three days');
    assert.equal(before.failingSince, failing.failingSince, 'the streak keeps its start');
    assert.equal((await notificationsOf(svc, practice.practiceId)).length, 0);

    // Just after: the next attempt (a retry now due) fails and the endpoint is turned off.
    advanceTo(svc, new Date(since + 3 * DAY + 60_000));
    const seenBefore = r.requests.length;
    await svc.worker.drain();
    assert.ok(r.requests.length > seenBefore, 'a retry was due just after three days');
    const off = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(off.enabled, false);
    assert.match(off.disabledReason, /three days/);

    const notifications = await notificationsOf(svc, practice.practiceId);
    assert.equal(notifications.length, 1);
    assert.equal(notifications[0]!.recipient, 'practice');
    assert.equal(notifications[0]!.subject_type, 'webhook_endpoint');
    assert.equal(notifications[0]!.subject_id, ep.id);
    const audit = await svc.admin('GET', `/practices/${practice.practiceId}/audit-events?limit=100`);
    assert.equal(audit.status, 200, audit.text);
    const disabled = audit.body.data.filter((e: { outcome: string }) => e.outcome === 'endpoint_disabled');
    assert.equal(disabled.length, 1, audit.text);
    assert.equal(disabled[0].resourceType, 'webhook_endpoint');
    assert.equal(disabled[0].resourceId, ep.id);

    // Nothing more is sent: pending retries are dropped and new events pass it by.
    const total = r.requests.length;
    await pay(svc, practice.practiceId, visit.invoiceId);
    for (let i = 0; i < 3; i++) {
      svc.clock.advance(DAY / 2);
      await svc.worker.drain();
    }
    assert.equal(r.requests.length, total);
    assert.equal((await notificationsOf(svc, practice.practiceId)).length, 1, 'told once');
    r.assertAllVerified();
  });

  test('a success resets the failure streak', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    let status = 500;
    r.reply = () => ({ status });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const visit = await billVisit(svc, practice);
    await svc.worker.drain();
    const first = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.ok(first.failingSince);
    const firstSince = new Date(first.failingSince).getTime();

    svc.clock.advance(2 * DAY);
    status = 200;
    await svc.worker.drain();
    const recovered = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(recovered.failingSince, null, 'a success ends the streak');
    assert.ok(recovered.lastSuccessAt);

    status = 500;
    svc.clock.advance(2 * DAY);
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    const again = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.ok(new Date(again.failingSince).getTime() >= firstSince + 4 * DAY - 1_000, 'a new streak');

    // Six days after the first failure but two into the new streak: still on.
    svc.clock.advance(2 * DAY);
    await pay(svc, practice.practiceId, visit.invoiceId);
    await svc.worker.drain();
    const still = await readEndpoint(svc, practice.practiceId, ep.id);
    assert.equal(still.enabled, true);
    assert.equal(still.failingSince, again.failingSince);
    assert.equal((await notificationsOf(svc, practice.practiceId)).length, 0);
    const log = await svc.admin('GET', endpointPath(practice.practiceId, ep.id, '/deliveries'));
    assert.ok(log.body.data.some((a: { statusCode: number }) => a.statusCode === 200));
    r.assertAllVerified();
  });
});
