// The client package's retries against the real service, on both databases: 429, 503 and 409
// `conflict` waited out (up to maxRetryAfterMs, whatever the backoff cap), 502 and 504 retried on reads
// and keyed requests only (Retry-After honoured, the same Idempotency-Key on every attempt), a lost
// connection retried when the call is safe to repeat, other refusals and exhausted retries thrown.
// A proxy in front of the service answers the injected refusals; the 503 of a failing audit log
// comes from the service itself. Waits are judged by what the client schedules
// (test/support/client-waits.ts), never by how long a call took.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ProblemError } from '@practice-billing/client';
import { parseRetryAfter, retryDelayMs } from '../packages/client/src/retry.ts';
import { describeEachBackend, patientBody, startService, type TestService } from './harness.ts';
import { FaultProxy, problem, sdkClient } from './sdk-fixtures.ts';
import { type ClientWait, watchClientWaits } from './support/client-waits.ts';

/** The waits the client scheduled while `work` ran, and what `work` gave. */
async function withWaits<T>(
  work: () => Promise<T>,
  onWait?: (wait: ClientWait) => void,
): Promise<{ result: T; waits: ClientWait[] }> {
  const watching = watchClientWaits(onWait);
  try {
    const result = await work();
    return { result, waits: watching.waits };
  } finally {
    watching.stop();
  }
}

test('backoff doubles from the base delay with equal jitter, stays under the cap, and Retry-After wins', () => {
  const policy = (r: number) => ({
    maxRetries: 5,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    maxRetryAfterMs: 1000,
    random: () => r,
  });
  assert.equal(retryDelayMs(policy(0), 0), 50);
  assert.equal(retryDelayMs(policy(0.999), 0), 100);
  assert.equal(retryDelayMs(policy(0), 3), 400);
  assert.equal(retryDelayMs(policy(0.999), 3), 800);
  assert.equal(retryDelayMs(policy(0.999), 10), 1000);
  assert.equal(retryDelayMs(policy(0), 0, 1), 1000);
  assert.equal(retryDelayMs(policy(0.5), 0, 0), 50);
  assert.equal(retryDelayMs(policy(0), 0, 2), undefined, 'a wait longer than the cap is not waited');
  const patient = { ...policy(0), maxDelayMs: 100, maxRetryAfterMs: 30_000 };
  assert.equal(
    retryDelayMs(patient, 0, 20),
    20_000,
    'a Retry-After is capped by its own maximum, not the backoff',
  );
  assert.equal(retryDelayMs(patient, 0, 31), undefined);
  assert.equal(parseRetryAfter('7'), 7);
  assert.equal(
    parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2030, 0, 1)),
    30,
  );
  assert.equal(parseRetryAfter('soon'), undefined);
  assert.equal(parseRetryAfter(null), undefined);
});

describeEachBackend('client package retries', (backend) => {
  let svc: TestService;
  let auditFails = 0;
  let proxy: FaultProxy;
  before(async () => {
    svc = await startService(backend, {
      auditFault: () => {
        if (auditFails > 0) {
          auditFails -= 1;
          throw new Error('audit log unavailable (test)');
        }
      },
    });
    proxy = await FaultProxy.start(svc.baseUrl);
  });
  after(async () => {
    await proxy.close();
    await svc.close();
  });

  test('429, 503 and 409 conflict are retried with the same Idempotency-Key; Retry-After is waited', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key);
    const refusals = [
      { status: 429, headers: { 'retry-after': '1' }, body: problem(429, 'rate_limited') },
      { status: 503, headers: { 'retry-after': '0' }, body: problem(503, 'service_unavailable') },
      { status: 409, body: problem(409, 'conflict') },
    ];
    proxy.seen.length = 0;
    proxy.plan = ({ n }) => refusals[n - 1] ?? 'forward';
    const { result: patient, waits } = await withWaits(() => client.patients.create(patientBody()));
    assert.match(patient.id, /^pat_/);
    assert.deepEqual(
      proxy.seen.map((s) => s.status),
      [429, 503, 409, 201],
    );
    assert.equal(new Set(proxy.seen.map((s) => s.idempotencyKey)).size, 1);
    assert.equal(waits.length, 3, 'a wait before each retry');
    assert.ok(waits[0]!.ms >= 1000, `waited the 429's Retry-After of 1 s (${waits[0]!.ms} ms)`);
    assert.ok(
      waits.every((w) => w.ended === 'ran out'),
      'each wait ran out before the retry',
    );
  });

  test('502 and 504 are retried on reads and on requests with an Idempotency-Key, not on others', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key);
    const gateway = (status: number) => ({ status, body: '<html>Bad Gateway</html>' });
    proxy.seen.length = 0;
    proxy.plan = ({ n }) => (n === 1 ? gateway(502) : n === 2 ? gateway(504) : 'forward');
    const page = await client.invoices.list().page();
    assert.deepEqual(page.data, []);
    assert.deepEqual(
      proxy.seen.map((s) => s.status),
      [502, 504, 200],
      'a read is sent again',
    );

    // A creating POST carries its Idempotency-Key: sent again under the same key.
    proxy.seen.length = 0;
    proxy.plan = ({ n }) => (n === 1 ? gateway(502) : 'forward');
    const created = await client.patients.create(patientBody());
    assert.deepEqual(
      proxy.seen.map((s) => s.status),
      [502, 201],
    );
    assert.equal(new Set(proxy.seen.map((s) => s.idempotencyKey)).size, 1, 'the same key both times');

    proxy.seen.length = 0;
    proxy.plan = ({ n }) => (n === 1 ? gateway(504) : 'forward');
    const refused = await client.patients.update(created.id, { lastName: 'Other' }).catch((e: unknown) => e);
    assert.ok(refused instanceof ProblemError, String(refused));
    assert.equal(refused.status, 504);
    assert.equal(proxy.seen.length, 1, 'a PATCH without an Idempotency-Key is not sent again');
  });

  test('a Retry-After up to maxRetryAfterMs is waited out even when backoffs are capped lower', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key, { retryMaxDelayMs: 50, maxRetryAfterMs: 5_000 });
    proxy.seen.length = 0;
    proxy.plan = ({ n }) =>
      n === 1
        ? { status: 503, headers: { 'retry-after': '1' }, body: problem(503, 'service_unavailable') }
        : 'forward';
    const { result: page, waits } = await withWaits(() => client.invoices.list().page());
    assert.deepEqual(page.data, []);
    assert.deepEqual(
      proxy.seen.map((s) => s.status),
      [503, 200],
    );
    assert.equal(waits.length, 1);
    assert.ok(
      waits[0]!.ms >= 1000,
      `the Retry-After of 1 s was waited, not the 50 ms cap (${waits[0]!.ms} ms)`,
    );
    assert.equal(waits[0]!.ended, 'ran out');
  });

  test("the service's own 503 (audit log unavailable, nothing done) is retried after its Retry-After", async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key);
    const person = patientBody();
    proxy.seen.length = 0;
    proxy.plan = () => 'forward';
    auditFails = 1;
    const patient = await client.patients.create(person);
    assert.deepEqual(
      proxy.seen.map((s) => s.status),
      [503, 201],
    );
    const found = await client.patients
      .find({ externalSystem: person.externalId.system, externalId: person.externalId.value })
      .toArray();
    assert.deepEqual(
      found.map((p) => p.id),
      [patient.id],
    );
  });

  test('exhausted retries throw the last refusal; a wait longer than allowed is not waited; 400 is never retried', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key, { maxRetries: 2 });
    proxy.seen.length = 0;
    proxy.plan = () => ({
      status: 503,
      headers: { 'retry-after': '0' },
      body: problem(503, 'service_unavailable'),
    });
    const exhausted = await client.invoices
      .list()
      .page()
      .catch((e: unknown) => e);
    assert.ok(exhausted instanceof ProblemError);
    assert.equal(exhausted.code, 'service_unavailable');
    assert.equal(exhausted.retryAfterSeconds, 0);
    assert.equal(proxy.seen.length, 3, 'the first attempt and two retries');

    proxy.seen.length = 0;
    proxy.plan = () => ({
      status: 429,
      headers: { 'retry-after': '3600' },
      body: problem(429, 'rate_limited'),
    });
    const { result: limited, waits } = await withWaits(() =>
      client.invoices
        .list()
        .page()
        .catch((e: unknown) => e),
    );
    assert.ok(limited instanceof ProblemError);
    assert.equal(limited.status, 429);
    assert.equal(limited.retryAfterSeconds, 3600);
    assert.equal(proxy.seen.length, 1);
    assert.deepEqual(waits, [], 'thrown at once, no wait');

    proxy.seen.length = 0;
    proxy.plan = () => 'forward';
    const bad = await client.invoices
      .list({ updatedSince: 'yesterday' })
      .page()
      .catch((e: unknown) => e);
    assert.ok(bad instanceof ProblemError);
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.errors.map((e) => e.field),
      ['updatedSince'],
    );
    assert.equal(proxy.seen.length, 1);
  });

  test('a lost connection on a read is retried; an abort stops the retries', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(proxy.baseUrl, practice.key, { retryBaseDelayMs: 200 });
    proxy.seen.length = 0;
    proxy.plan = ({ n }) => (n <= 2 ? 'reset' : 'forward');
    const page = await client.invoices.list().page();
    assert.deepEqual(page.data, []);
    assert.deepEqual(
      proxy.seen.map((s) => s.action),
      ['reset', 'reset', 'forward'],
    );

    proxy.seen.length = 0;
    proxy.plan = () => ({
      status: 503,
      headers: { 'retry-after': '5' },
      body: problem(503, 'service_unavailable'),
    });
    const controller = new AbortController();
    // Aborted while the client waits out the 503's Retry-After (once its wait is in place).
    const { result: stopped, waits } = await withWaits(
      () =>
        client.invoices
          .list({}, { signal: controller.signal })
          .page()
          .catch((e: unknown) => e),
      () => setImmediate(() => controller.abort(new Error('caller gave up'))),
    );
    assert.equal((stopped as Error).message, 'caller gave up');
    assert.equal(waits.length, 1);
    assert.ok(waits[0]!.ms >= 5000, `the Retry-After of 5 s was the wait (${waits[0]!.ms} ms)`);
    assert.equal(waits[0]!.ended, 'cleared', 'the wait was cut short');
    assert.equal(proxy.seen.length, 1);
  });
});
