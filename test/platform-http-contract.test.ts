// The HTTP contract every API answer keeps: the Problem shape, request id and rate-limit headers,
// unknown paths and methods, content types, JSON errors, field and query errors reported at once,
// the errors page and the health checks. Body size, rate limiting and 500s: platform-http-limits.test.ts.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { ERROR_CODES } from '../src/platform/http/errors.ts';
import {
  type Answer,
  apiClient,
  call,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

const PUBLIC_BASE = 'https://billing.example.test';
/** Every refusal here is checked as a whole Problem document, against the contract. */
const WHOLE_PROBLEM = { problemBase: PUBLIC_BASE };

/** Sends bytes as they are (for requests fetch would not send) and reads the one answer. */
function rawAnswer(svc: TestService, request: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(svc.baseUrl).port), '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head = '', text = ''] = raw.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = new Headers(
        lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text), text });
    });
  });
}

function fieldsOf(answer: Answer): Record<string, string> {
  const errors = (answer.body?.errors ?? []) as Array<{ field: string; code: string; message: string }>;
  for (const e of errors) assert.ok(e.message.length > 0, `a message for ${e.field}`);
  return Object.fromEntries(errors.map((e) => [e.field, e.code]));
}

function assertRateLimitHeaders(answer: Answer, label: string): void {
  const limit = Number(answer.headers.get('x-ratelimit-limit'));
  const remaining = Number(answer.headers.get('x-ratelimit-remaining'));
  const reset = Number(answer.headers.get('x-ratelimit-reset'));
  assert.ok(Number.isInteger(limit) && limit > 0, `${label}: X-RateLimit-Limit`);
  assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining < limit, `${label}: Remaining`);
  const nowSeconds = Date.now() / 1000;
  assert.ok(reset >= Math.floor(nowSeconds) && reset <= nowSeconds + 61, `${label}: Reset is epoch seconds`);
}

describeEachBackend('HTTP contract', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: ReturnType<typeof apiClient>;
  before(async () => {
    svc = await startService(backend, { env: { PUBLIC_BASE_URL: PUBLIC_BASE } });
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
  });
  after(async () => {
    await svc.close();
  });

  test('an error answer is a Problem whose type links the code, hyphenated, on the errors page', async () => {
    const missing = await api('GET', '/patients/pat_0000000000000000000000');
    refusedWith(missing, 404, 'not_found', undefined, WHOLE_PROBLEM);
    const invalid = await api('POST', '/patients', {
      body: patientBody({ lastName: '' }),
      idempotencyKey: uniqueKey(),
    });
    refusedWith(invalid, 422, 'validation_failed', undefined, WHOLE_PROBLEM);
    const unauthenticated = await call(svc.baseUrl, 'GET', '/api/v1/patients/pat_x');
    refusedWith(unauthenticated, 401, 'unauthenticated', undefined, WHOLE_PROBLEM);
    assert.notEqual(missing.body.requestId, invalid.body.requestId);
  });

  test('success and error answers carry X-Request-Id and the X-RateLimit headers', async () => {
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    const answers: Array<[string, Answer]> = [
      ['201', created],
      ['200', await api('GET', `/patients/${created.body.id}`)],
      ['404', await api('GET', '/patients/pat_0000000000000000000000')],
      ['422', await api('POST', '/patients', { body: {}, idempotencyKey: uniqueKey() })],
      ['400', await api('GET', '/patients?externalSystem=urn%3Ax')],
      ['401', await call(svc.baseUrl, 'GET', `/api/v1/patients/${created.body.id}`)],
      ['404', await api('GET', '/no-such-thing')],
      ['405', await api('DELETE', '/patients')],
      ['400', await api('GET', '/patients/%E0%A4%A')],
    ];
    const ids = new Set<string>();
    for (const [label, answer] of answers) {
      assert.equal(String(answer.status), label, answer.text);
      const id = answer.headers.get('x-request-id');
      assert.ok(id, `${label}: X-Request-Id`);
      ids.add(id);
      assertRateLimitHeaders(answer, label);
    }
    assert.equal(ids.size, answers.length, 'every request has its own id');
  });

  test('an unknown path answers 404 not_found, in and outside /api/v1', async () => {
    refusedWith(await api('GET', '/no-such-thing'), 404, 'not_found', undefined, WHOLE_PROBLEM);
    refusedWith(
      await api('GET', '/patients/pat_x/no-such-thing'),
      404,
      'not_found',
      undefined,
      WHOLE_PROBLEM,
    );
    refusedWith(await call(svc.baseUrl, 'GET', '/nowhere'), 404, 'not_found', undefined, WHOLE_PROBLEM);
    // paths the router itself refuses still answer Problems
    refusedWith(
      await api('GET', `/patients/pat_${'a'.repeat(300)}`),
      404,
      'not_found',
      undefined,
      WHOLE_PROBLEM,
    );
    refusedWith(await api('GET', '/patients/%E0%A4%A'), 400, 'invalid_request', undefined, WHOLE_PROBLEM);
  });

  test('a request line or headers over 16 KB answer 431 headers_too_large as a Problem with X-Request-Id', async () => {
    const answers = [
      await rawAnswer(
        svc,
        `GET /api/v1/patients HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`,
      ),
      await rawAnswer(svc, `GET /api/v1/patients?q=${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
    ];
    for (const answer of answers) {
      refusedWith(answer, 431, 'headers_too_large', undefined, WHOLE_PROBLEM);
      assert.match(answer.body.requestId, /^req_/);
    }
    assert.notEqual(answers[0]!.body.requestId, answers[1]!.body.requestId);
  });

  test('a known method no route serves answers 405 with Allow, with or without a body', async () => {
    const bodiless = await api('QUERY', '/patients');
    refusedWith(bodiless, 405, 'method_not_allowed', undefined, WHOLE_PROBLEM);
    assert.ok((bodiless.headers.get('allow') ?? '').split(/,\s*/).includes('GET'), bodiless.text);
    const withBody = await api('QUERY', '/patients', { rawBody: '{"lastName":' });
    refusedWith(withBody, 405, 'method_not_allowed', undefined, WHOLE_PROBLEM);
    refusedWith(await api('QUERY', '/no-such-thing'), 404, 'not_found', undefined, WHOLE_PROBLEM);
  });

  test('an id of any length answers 401 without a valid key, and 404 with one', async () => {
    for (const length of [201, 1000, 8000]) {
      const path = `/api/v1/patients/pat_${'a'.repeat(length)}`;
      refusedWith(await call(svc.baseUrl, 'GET', path), 401, 'unauthenticated', undefined, WHOLE_PROBLEM);
      refusedWith(
        await call(svc.baseUrl, 'GET', path, { token: 'pbk_wrong' }),
        401,
        'unauthenticated',
        undefined,
        WHOLE_PROBLEM,
      );
      refusedWith(await api('GET', path.slice('/api/v1'.length)), 404, 'not_found', undefined, WHOLE_PROBLEM);
    }
  });

  test('a method the path does not accept answers 405 with Allow naming the accepted ones', async () => {
    const onList = await api('DELETE', '/patients');
    refusedWith(onList, 405, 'method_not_allowed', undefined, WHOLE_PROBLEM);
    const allowList = (onList.headers.get('allow') ?? '').split(/,\s*/);
    assert.ok(allowList.includes('GET') && allowList.includes('POST'), onList.headers.get('allow') ?? '');
    assert.ok(!allowList.includes('DELETE'));

    const onOne = await api('PUT', '/patients/pat_0000000000000000000000', { body: patientBody() });
    refusedWith(onOne, 405, 'method_not_allowed', undefined, WHOLE_PROBLEM);
    const allowOne = (onOne.headers.get('allow') ?? '').split(/,\s*/);
    assert.ok(allowOne.includes('GET') && allowOne.includes('PATCH'), onOne.headers.get('allow') ?? '');
    assert.ok(!allowOne.includes('PUT') && !allowOne.includes('POST'));
  });

  test('a body not sent as JSON answers 415 unsupported_media_type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const answer = await api('POST', '/patients', {
        rawBody: JSON.stringify(patientBody()),
        headers: { 'content-type': type },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(answer, 415, 'unsupported_media_type', undefined, WHOLE_PROBLEM);
    }
    const patch = await api('PATCH', '/patients/pat_0000000000000000000000', {
      rawBody: '{"lastName":"X"}',
      headers: { 'content-type': 'text/plain' },
    });
    refusedWith(patch, 415, 'unsupported_media_type', undefined, WHOLE_PROBLEM);
  });

  test('a body that is not JSON answers 400 invalid_request', async () => {
    for (const raw of ['{"givenNames": [', "{'lastName': 'X'}", 'lastName=X']) {
      const answer = await api('POST', '/patients', { rawBody: raw, idempotencyKey: uniqueKey() });
      refusedWith(answer, 400, 'invalid_request', undefined, WHOLE_PROBLEM);
    }
  });

  test('unknown body fields are refused with 422 naming each of them', async () => {
    const body = {
      ...patientBody(),
      nickname: 'Lulu',
      externalId: { system: 'urn:test:mrn', value: 'A-1', assigner: 'x' },
      addresses: [{ city: 'Durban', planet: 'Earth' }],
    };
    const answer = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
    refusedWith(answer, 422, 'validation_failed', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(answer), {
      nickname: 'invalid',
      'externalId.assigner': 'invalid',
      'addresses.0.planet': 'invalid',
    });
  });

  test('every wrong field is reported at once, with dotted paths', async () => {
    const body = {
      givenNames: ['', 'Grace'],
      birthDate: '1990-02-29',
      gender: 'M',
      contactPoints: [
        { system: 'email', value: 'a@example.test' },
        { system: 'telex', value: '123' },
      ],
      externalId: { system: 'urn:test:mrn', value: 'x'.repeat(101) },
    };
    const answer = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
    refusedWith(answer, 422, 'validation_failed', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(answer), {
      'givenNames.0': 'invalid',
      lastName: 'required',
      birthDate: 'invalid',
      gender: 'invalid',
      'contactPoints.1.system': 'invalid',
      'externalId.value': 'invalid',
    });
    const fields = Object.keys(fieldsOf(answer));
    for (const f of fields) assert.ok(answer.body.detail.includes(f), `detail names ${f}`);
  });

  test('a missing or malformed query parameter or header answers 400 naming it', async () => {
    const noId = await api('GET', '/patients?externalSystem=urn%3Atest%3Amrn');
    refusedWith(noId, 400, 'invalid_request', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(noId), { externalId: 'required' });

    const neither = await api('GET', '/patients');
    refusedWith(neither, 400, 'invalid_request', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(neither), { externalSystem: 'required', externalId: 'required' });

    const tooLong = await api('GET', `/patients?externalSystem=urn%3Ax&externalId=${'9'.repeat(101)}`);
    refusedWith(tooLong, 400, 'invalid_request', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(tooLong), { externalId: 'invalid' });

    const longKey = await api('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: 'k'.repeat(256),
    });
    refusedWith(longKey, 400, 'invalid_request', undefined, WHOLE_PROBLEM);
    assert.deepEqual(fieldsOf(longKey), { 'Idempotency-Key': 'invalid' });
    const okKey = await api('POST', '/patients', { body: patientBody(), idempotencyKey: 'k'.repeat(255) });
    assert.equal(okKey.status, 201, okKey.text);
  });

  test('the errors page has an anchor for every error code', async () => {
    const page = await call(svc.baseUrl, 'GET', '/errors');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    for (const code of Object.keys(ERROR_CODES)) {
      assert.ok(page.text.includes(`id="${code.replaceAll('_', '-')}"`), `anchor for ${code}`);
    }
    // the codes the spec lists are all there
    const specCodes =
      'invalid_request invalid_cursor validation_failed unauthenticated forbidden addon_inactive not_found method_not_allowed conflict duplicate business_rule unprocessable idempotency_key_reused payload_too_large unsupported_media_type rate_limited internal_error service_unavailable';
    for (const code of specCodes.split(' ')) assert.ok(code in ERROR_CODES, `${code} is defined`);
  });

  test('/healthz and /readyz answer 200', async () => {
    const health = await call(svc.baseUrl, 'GET', '/healthz');
    assert.equal(health.status, 200, health.text);
    const ready = await call(svc.baseUrl, 'GET', '/readyz');
    assert.equal(ready.status, 200, ready.text);
    assert.equal(ready.body.status, 'ready');
  });
});
