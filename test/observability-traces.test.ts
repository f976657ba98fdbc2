// Traces and metrics as an operator's own tools read them, on PostgreSQL with the API and the worker
// as separate processes (`practice-billing serve` and `practice-billing worker`): a local OTLP receiver
// (HTTP, JSON) sees, for one bill sent with a W3C traceparent that submits a claim, the API's server
// span named by its route with the database's spans inside it, and the worker's submission, the
// insurer's answer, the remittance and the webhook deliveries in the same trace; nothing exported
// carries the patient's data. Both processes' Prometheus text is scraped with METRICS_TOKEN (the
// worker's on METRICS_PORT). The PostgreSQL block needs DATABASE_URL; the embedded database's block
// (`npm start`, one process) runs the same bill and finds the same spans, its statements as client
// spans of their own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  type RemotePractice,
  remotePractice,
  type ServeProcess,
  startServeProcess,
  startWorkerProcess,
  type WorkerProcess,
} from './child-service.ts';
import { call, patientBody, startService, type TestService } from './harness.ts';
import {
  freePort,
  removeDataDir,
  type ServiceProcess,
  sandboxBanner,
  startServiceProcess,
  tempDir,
} from './processes.ts';
import { createCoverage, createEncounter, createPatient } from './support/factories.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.ts';

const METRICS_TOKEN = `mtk_${randomBytes(12).toString('hex')}`;

async function until<T>(what: string, read: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Scenario {
  baseUrl: string;
  key: string;
  practiceId: string;
  practitionerId: string;
  /** What the client's id matches. */
  clientId: RegExp;
  apiService: string;
  workerService: string;
  /** The practice's webhook endpoint. */
  endpointId: string;
  /** Whether a span is one of the database's statements. */
  databaseSpan: (span: ReceivedSpan) => boolean;
  output: () => string;
}

/**
 * Bills a visit with a claim, sent with a traceparent, and follows it in the receiver: the server span
 * by its route, a database span inside it, the submission, the insurer's answer, the remittance and a
 * delivery with its outgoing POST, all in the request's trace; no patient data anywhere in the export.
 */
/** The patient registered, and the bill sent with a traceparent: answers the trace's id and the patient. */
async function billWithTraceparent(at: Scenario) {
  const remote = (method: string, p: string, options: Parameters<typeof call>[3] = {}) =>
    call(at.baseUrl, method, `/api/v1${p}`, { token: at.key, ...options });
  const person = patientBody({
    givenNames: ['Nomvula', 'Thandeka'],
    lastName: 'Xabanisa',
    birthDate: '1977-11-23',
  });
  const patient = await createPatient(remote, person);
  await createCoverage(remote, patient.id, { planId: 'pln_ubuntu_essential', memberNumber: 'M-31415' });
  // A look-up by the patient's identifier: its value is in the query string, never in a span.
  const found = await remote(
    'GET',
    `/patients?externalSystem=${encodeURIComponent(person.externalId.system)}&externalId=${person.externalId.value}`,
  );
  assert.equal(found.status, 200, found.text);
  const when = new Date(Date.now() - 3600_000).toISOString();
  const encounter = await createEncounter(remote, {
    patientId: patient.id,
    practitionerId: at.practitionerId,
    start: when,
    end: when,
    diagnoses: [{ code: 'J06.9' }],
    procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
  });
  const traceId = randomBytes(16).toString('hex');
  const billed = await remote('POST', `/encounters/${encounter.id}/bill`, {
    body: { issue: true, submitClaim: true },
    idempotencyKey: `idem-${randomBytes(8).toString('hex')}`,
    headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
  });
  assert.equal(billed.status, 201, billed.text);

  return { traceId, person };
}

async function followOneBill(receiver: OtlpReceiver, at: Scenario): Promise<void> {
  const { traceId, person } = await billWithTraceparent(at);
  const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
  const named = (name: string) => (spans: ReceivedSpan[]) => spans.find((s) => s.name === name);
  const wait = (what: string, find: (spans: ReceivedSpan[]) => ReceivedSpan | undefined) =>
    until(
      `${what} in the trace (spans so far: ${inTrace()
        .map((s) => s.name)
        .join(', ')})\n${at.output()}`,
      () => find(inTrace()),
    );

  const server = await wait('the server span', named('POST /api/v1/encounters/:encounterId/bill'));
  assert.equal(server.attributes['http.route'], '/api/v1/encounters/:encounterId/bill');
  assert.equal(server.attributes['http.request.method'], 'POST');
  assert.equal(server.attributes['http.response.status_code'], 201);
  assert.equal(server.attributes['practice_billing.practice.id'], at.practiceId);
  assert.match(String(server.attributes['practice_billing.client.id']), at.clientId);
  assert.equal(server.service, at.apiService);
  // The request's statements are spans inside it (a child of the server span, or of one of its children).
  const byId = new Map(inTrace().map((span) => [span.spanId, span]));
  const under = (span: ReceivedSpan, ancestor: ReceivedSpan): boolean => {
    for (let p = byId.get(span.parentSpanId); p; p = byId.get(p.parentSpanId))
      if (p === ancestor) return true;
    return false;
  };
  await wait('a database span inside the request', (spans) => {
    for (const span of spans) byId.set(span.spanId, span);
    return spans.find((span) => at.databaseSpan(span) && under(span, server));
  });

  const submit = await wait('the submission', named('claim.submit process'));
  assert.equal(submit.service, at.workerService);
  assert.equal(submit.attributes['practice_billing.practice.id'], at.practiceId);
  const insurer = await wait('the insurer answer', named('insurer submit'));
  assert.equal(insurer.parentSpanId, submit.spanId);
  await wait('the remittance', named('insurer.remittance process'));
  const delivery = await wait('a webhook delivery', (spans) =>
    spans.find(
      (s) => s.name === 'webhook.deliver process' && s.attributes['practice_billing.webhook.endpoint.id'],
    ),
  );
  assert.equal(delivery.attributes['practice_billing.webhook.endpoint.id'], at.endpointId);
  assert.equal(delivery.attributes['practice_billing.webhook.attempt'], 1);
  await wait("the delivery's outgoing POST", (spans) =>
    spans.find((s) => s.parentSpanId === delivery.spanId && s.kind === 3),
  );

  await assertNothingPrivate(receiver, person);
}

/**
 * The patient look-up's query string is there by its names only, the exports are not themselves
 * traced, and nothing exported (every body, every attribute) names the patient.
 */
async function assertNothingPrivate(receiver: OtlpReceiver, person: ReturnType<typeof patientBody>) {
  await until('the look-up, its query string without values', () =>
    receiver.spans.find(
      (span) =>
        span.name === 'GET /api/v1/patients' &&
        span.attributes['url.query'] === 'externalSystem=REDACTED&externalId=REDACTED',
    ),
  );
  // The exports themselves are not traced (a span per export would feed itself).
  assert.ok(
    !receiver.spans.some((span) => String(span.attributes['url.full'] ?? '').includes('/v1/traces')),
    'an export to the collector was traced',
  );
  // Nothing exported names the patient (the export as a whole, every attribute of every span).
  const exported = receiver.raw();
  for (const secret of [
    ...person.givenNames,
    person.lastName,
    person.birthDate,
    person.externalId.value,
    'M-31415',
  ]) {
    const carrier = receiver.spans.find((s) => JSON.stringify(s).includes(secret));
    assert.ok(!exported.includes(secret), `the traces carry ${secret}: ${JSON.stringify(carrier)}`);
  }
}

describe('traces and metrics across the API and worker processes (postgres)', {
  skip: !process.env.DATABASE_URL,
}, () => {
  let svc: TestService;
  let receiver: OtlpReceiver;
  let hooks: http.Server;
  let hookUrl: string;
  let api: ServeProcess;
  let worker: WorkerProcess;
  let workerMetricsPort: number;
  let practice: RemotePractice;
  let endpointId: string;

  before(async () => {
    svc = await startService('postgres');
    receiver = await startOtlpReceiver();
    hooks = http.createServer((_request, response) => response.writeHead(204).end());
    await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
    const address = hooks.address();
    hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`;
    const shared = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      METRICS_TOKEN,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      INSURER_DELAY_MS: '0',
      REMITTANCE_DELAY_MS: '0',
    };
    assert.ok(svc.databaseUrl);
    api = await startServeProcess({ databaseUrl: svc.databaseUrl, env: shared });
    workerMetricsPort = await freePort();
    worker = startWorkerProcess({
      databaseUrl: svc.databaseUrl,
      env: { ...shared, METRICS_PORT: String(workerMetricsPort), LOG_LEVEL: 'info' },
    });
    await until('the worker to serve its metrics', () =>
      worker.output().includes('metrics served at') ? true : undefined,
    );
    practice = await remotePractice(api.baseUrl, api.adminToken);
    const endpoint = await call(
      api.baseUrl,
      'POST',
      `/admin/v1/practices/${practice.practiceId}/webhook-endpoints`,
      {
        token: api.adminToken,
        body: { url: hookUrl },
      },
    );
    assert.equal(endpoint.status, 201, endpoint.text);
    endpointId = endpoint.body.id;
  });
  after(async () => {
    await worker?.stop();
    await api?.stop();
    await receiver?.close();
    await new Promise((resolve) => hooks?.close(resolve));
    await svc?.close();
  });

  test('one bill with a claim, sent with a traceparent: the API, the database and the worker in one trace', async () => {
    await followOneBill(receiver, {
      baseUrl: api.baseUrl,
      key: practice.key,
      practiceId: practice.practiceId,
      practitionerId: practice.practitionerId,
      clientId: new RegExp(`^${practice.clientId}$`),
      endpointId,
      apiService: 'practice-billing-api',
      workerService: 'practice-billing-worker',
      databaseSpan: (span) =>
        span.attributes['db.system.name'] === 'postgresql' && span.name.startsWith('pg.query:'),
      output: () => worker.output(),
    });
  });

  test('both processes are scraped with METRICS_TOKEN; the admin token and no token are refused', async () => {
    const apiMetrics = await call(api.baseUrl, 'GET', '/metrics', { token: METRICS_TOKEN });
    assert.equal(apiMetrics.status, 200, apiMetrics.text);
    assert.match(
      apiMetrics.text,
      /^http_request_duration_seconds_count\{method="POST",route="\/api\/v1\/encounters\/:encounterId\/bill",status_code="201"\} 1$/m,
    );
    assert.match(apiMetrics.text, /^process_cpu_seconds_total /m);
    assert.match(apiMetrics.text, /^nodejs_eventloop_lag_seconds /m);
    assert.match(apiMetrics.text, /^db_pool_connections_max\{pool="practice-billing"\} \d+$/m);
    assert.match(apiMetrics.text, /^practice_billing_jobs_waiting\{lane="claims"\} /m);
    assert.equal((await call(api.baseUrl, 'GET', '/metrics', { token: api.adminToken })).status, 401);
    assert.equal((await call(api.baseUrl, 'GET', '/metrics', {})).status, 401);

    const workerUrl = `http://127.0.0.1:${workerMetricsPort}`;
    let text = '';
    const deadline = Date.now() + 20_000;
    while (
      Date.now() < deadline &&
      !/^jobs_completed_total\{kind="insurer.remittance",outcome="done"\} 1$/m.test(text)
    ) {
      const answer = await call(workerUrl, 'GET', '/metrics', { token: METRICS_TOKEN });
      assert.equal(answer.status, 200, answer.text);
      text = answer.text;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.match(text, /^jobs_completed_total\{kind="claim.submit",outcome="done"\} 1$/m);
    assert.match(text, /^jobs_completed_total\{kind="insurer.remittance",outcome="done"\} 1$/m);
    assert.match(text, /^job_duration_seconds_count\{kind="claim.submit",outcome="done"\} 1$/m);
    assert.match(text, /^claims_answered_total\{outcome="accepted"\} 1$/m);
    assert.match(text, /^webhook_attempts_total\{outcome="delivered"\} [1-9]\d*$/m);
    assert.match(text, /^db_pool_connections_max\{pool="practice-billing-worker"\} \d+$/m);
    assert.match(text, /^practice_billing_ready 1$/m, 'the worker says it reaches its database');
    assert.equal((await call(workerUrl, 'GET', '/metrics', {})).status, 401);

    // The worker logs each job's start and end at info, naming kind, practice, attempt and outcome.
    const ended = worker
      .output()
      .split('\n')
      .filter((line) => line.includes('"job ended"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const submitted = ended.find((line) => line.kind === 'claim.submit');
    assert.ok(submitted, worker.output());
    assert.equal(submitted.practiceId, practice.practiceId);
    assert.equal(submitted.outcome, 'done');
    assert.equal(typeof submitted.attempt, 'number');
    assert.equal(typeof submitted.durationMs, 'number');
  });
});

describe('traces on the embedded database (`npm start`: the API and the worker in one process)', () => {
  let receiver: OtlpReceiver;
  let hooks: http.Server;
  let service: ServiceProcess;
  let dataDir: string;

  before(async () => {
    receiver = await startOtlpReceiver();
    hooks = http.createServer((_request, response) => response.writeHead(204).end());
    await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
    dataDir = tempDir('traces');
    service = await startServiceProcess({
      dataDir,
      port: await freePort(),
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        INSURER_DELAY_MS: '0',
        REMITTANCE_DELAY_MS: '0',
      },
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await service?.stop();
    if (dataDir) removeDataDir(dataDir);
    await receiver?.close();
    await new Promise((resolve) => hooks?.close(resolve));
  });

  test('the same request and job spans, and the statements as client spans inside the request', async () => {
    const banner = sandboxBanner(service.stdout());
    const practitionerId = /practitioner +(prt_\S+)/.exec(service.stdout())?.[1];
    assert.ok(practitionerId);
    const address = hooks.address();
    const endpoint = await call(
      service.baseUrl,
      'POST',
      `/admin/v1/practices/${banner.practiceId}/webhook-endpoints`,
      {
        token: banner.adminToken,
        body: { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks` },
      },
    );
    assert.equal(endpoint.status, 201, endpoint.text);
    await followOneBill(receiver, {
      baseUrl: service.baseUrl,
      key: banner.apiKey,
      practiceId: banner.practiceId,
      practitionerId,
      clientId: /^cli_/,
      endpointId: endpoint.body.id,
      apiService: 'practice-billing',
      workerService: 'practice-billing',
      databaseSpan: (span) =>
        span.attributes['db.system.name'] === 'postgresql' && span.name.startsWith('pglite.query:'),
      output: () => `${service.stdout()}\n${service.stderr()}`,
    });
  });
});
