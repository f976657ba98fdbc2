// What the alert rules watch, counted as it happens (docs/monitoring/alerts.rules.yml): an endpoint
// whose deliveries fail shows with how long it has failed, a request whose audit row cannot be written
// is counted by cause, the process says it reaches its database, and webhook attempts and rate-limit
// refusals are counted by outcome and reason. In-process service, on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AuditEntry } from '../src/platform/audit-log.ts';
import {
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { addEndpoint, billVisit, Receiver } from './webhooks-fixtures.ts';

/** The value of one series in Prometheus text (0 when absent). */
function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describeEachBackend('metrics the alert rules watch', (backend) => {
  let svc: TestService;
  let fault: ((entry: AuditEntry) => void) | undefined;
  const receivers: Receiver[] = [];
  const scrape = async () => {
    const answer = await call(svc.baseUrl, 'GET', '/metrics', { token: svc.adminToken });
    assert.equal(answer.status, 200, answer.text);
    return answer.text;
  };

  before(async () => {
    svc = await startService(backend, { auditFault: (entry) => fault?.(entry) });
  });
  after(async () => {
    await svc.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test('the process reaches its database: practice_billing_ready 1', async () => {
    assert.equal(value(await scrape(), 'practice_billing_ready'), 1);
  });

  test('an endpoint whose deliveries fail is listed with how long it has failed; the attempts by outcome', async () => {
    const practice = await svc.newPractice();
    const r = await Receiver.forService(svc);
    receivers.push(r);
    r.reply = () => ({ status: 500, body: 'down' });
    const ep = await addEndpoint(svc, practice.practiceId, r);
    const series = `practice_billing_webhook_endpoint_failing_seconds{practice="${practice.practiceId}",endpoint="${ep.id}"}`;
    const failedBefore = value(await scrape(), 'webhook_attempts_total{outcome="failed"}');
    const retriedBefore = value(
      await scrape(),
      'jobs_completed_total{kind="webhook.deliver",outcome="retry"}',
    );
    assert.ok(!(await scrape()).includes(series), 'not failing before its first delivery');
    await billVisit(svc, practice);
    await svc.worker.drain();
    svc.clock.advance(60_000);
    const text = await scrape();
    assert.ok(text.includes(series), text);
    assert.ok(value(text, series) >= 60, `failing for ${value(text, series)} s`);
    assert.equal(value(text, 'webhook_attempts_total{outcome="failed"}'), failedBefore + 1);
    assert.equal(
      value(text, 'jobs_completed_total{kind="webhook.deliver",outcome="retry"}'),
      retriedBefore + 1,
      'the delivery job is given back to run again',
    );
  });

  test('a request whose audit row cannot be written is answered 503 and counted as an audit failure', async () => {
    const practice = await svc.newPractice();
    const before = value(await scrape(), 'requests_unavailable_total{cause="audit"}');
    fault = () => {
      throw new Error('audit store down');
    };
    try {
      const refused = await call(svc.baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        body: patientBody(),
        idempotencyKey: uniqueKey(),
      });
      assert.equal(refused.status, 503, refused.text);
    } finally {
      fault = undefined;
    }
    assert.equal(value(await scrape(), 'requests_unavailable_total{cause="audit"}'), before + 1);
  });

  test('a client past its rate limit is refused and counted', async () => {
    const practice = await svc.newPractice({ rateLimitPerMinute: 1 });
    const before = value(await scrape(), 'rate_limit_refusals_total{reason="client"}');
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push((await call(svc.baseUrl, 'GET', '/api/v1/patients', { token: practice.key })).status);
    const refused = answers.filter((status) => status === 429).length;
    assert.ok(refused >= 1, answers.join(', '));
    assert.equal(value(await scrape(), 'rate_limit_refusals_total{reason="client"}'), before + refused);
  });
});
