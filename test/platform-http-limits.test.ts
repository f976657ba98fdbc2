// Limits of the HTTP contract: the 256 KB body limit (with Content-Length and chunked), the
// per-client rate limit, and a 500 that reveals nothing of the service's insides.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { addClient } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const LIMIT = 256 * 1024;

/** A valid patient JSON padded with white space to exactly `bytes` bytes. */
function paddedPatient(bytes: number): Buffer {
  const json = JSON.stringify(patientBody());
  assert.ok(json.length < bytes);
  return Buffer.from(json + ' '.repeat(bytes - json.length), 'utf8');
}

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers
  body: any;
}

/** POSTs with Transfer-Encoding: chunked (no Content-Length), the body streamed in 16 KB pieces. */
function postChunked(svc: TestService, path: string, key: string, body: Buffer): Promise<RawAnswer> {
  const url = new URL(`/api/v1${path}`, svc.baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        method: 'POST',
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': uniqueKey(),
          'transfer-encoding': 'chunked',
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: JSON.parse(text) });
        });
        response.on('error', reject);
      },
    );
    // The service may answer 413 and stop reading before the whole body is sent.
    request.on('error', (error) => reject(error));
    let offset = 0;
    const writeNext = () => {
      while (offset < body.length) {
        const piece = body.subarray(offset, offset + 16 * 1024);
        offset += piece.length;
        if (!request.write(piece)) {
          request.once('drain', writeNext);
          return;
        }
      }
      request.end();
    };
    writeNext();
  });
}

describeEachBackend('HTTP limits', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: ReturnType<typeof apiClient>;
  before(async () => {
    svc = await startService(backend);
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
  });
  after(async () => {
    await svc.close();
  });

  test('a body of exactly 256 KB is accepted; one byte more is 413 payload_too_large', async () => {
    const exact = paddedPatient(LIMIT);
    assert.equal(exact.length, 262144);
    const accepted = await api('POST', '/patients', {
      rawBody: exact.toString('utf8'),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(accepted.status, 201, accepted.text);
    assert.equal(accepted.body.object, 'patient');

    const over = await api('POST', '/patients', {
      rawBody: paddedPatient(LIMIT + 1).toString('utf8'),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(over.status, 413, over.text);
    assert.equal(over.body.code, 'payload_too_large');
    assert.equal(over.body.requestId, over.headers.get('x-request-id'));
  });

  test('the same limit holds for a chunked body without Content-Length', async () => {
    const accepted = await postChunked(svc, '/patients', practice.key, paddedPatient(LIMIT));
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
    assert.equal(accepted.body.object, 'patient');

    const over = await postChunked(svc, '/patients', practice.key, paddedPatient(LIMIT + 1));
    assert.equal(over.status, 413, JSON.stringify(over.body));
    assert.equal(over.body.code, 'payload_too_large');

    const far = await postChunked(svc, '/patients', practice.key, paddedPatient(4 * LIMIT));
    assert.equal(far.status, 413, JSON.stringify(far.body));
  });

  test('a PATCH body over 256 KB is refused too', async () => {
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    const json = '{"lastName":"Nkosi"}';
    const over = await api('PATCH', `/patients/${created.body.id}`, {
      rawBody: json + ' '.repeat(LIMIT + 1 - json.length),
    });
    assert.equal(over.status, 413, over.text);
    assert.equal(over.body.code, 'payload_too_large');
  });

  test('a client over its rate limit gets 429 rate_limited with Retry-After; Remaining counts down', async () => {
    const limited = await addClient(svc, practice.practiceId, { rateLimitPerMinute: 3 });
    const limitedApi = apiClient(svc, limited.key);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await limitedApi('GET', '/patients/pat_0000000000000000000000');
      assert.equal(answer.status, 404, answer.text);
      assert.equal(answer.headers.get('x-ratelimit-limit'), '3');
      remaining.push(answer.headers.get('x-ratelimit-remaining') ?? '');
    }
    assert.deepEqual(remaining, ['2', '1', '0']);

    const refused = await limitedApi('GET', '/patients/pat_0000000000000000000000');
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.code, 'rate_limited');
    assert.equal(refused.body.requestId, refused.headers.get('x-request-id'));
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `Retry-After ${retryAfter}`,
    );
    assert.equal(refused.headers.get('x-ratelimit-limit'), '3');
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    assert.ok(reset >= Math.floor(Date.now() / 1000) && reset <= Date.now() / 1000 + 61);

    // a creating call is limited too, and the limit is per client: the practice's other key goes on
    const refusedCreate = await limitedApi('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(refusedCreate.status, 429, refusedCreate.text);
    const other = await api('GET', '/patients/pat_0000000000000000000000');
    assert.equal(other.status, 404, other.text);
  });

  test('a failure on the service side answers 500 internal_error revealing no internals', async () => {
    const created = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(created.status, 201, created.text);
    // Corrupt the stored row so that answering it fails inside the service.
    await sql`UPDATE patients SET given_names = '"not-a-list"'::jsonb WHERE id = ${created.body.id}`.execute(
      svc.db.kysely,
    );
    const failed = await api('GET', `/patients/${created.body.id}`);
    assert.equal(failed.status, 500, failed.text);
    assert.equal(failed.body.code, 'internal_error');
    assert.equal(failed.body.status, 500);
    assert.equal(failed.body.requestId, failed.headers.get('x-request-id'));
    assert.deepEqual(Object.keys(failed.body).sort(), [
      'code',
      'detail',
      'requestId',
      'status',
      'title',
      'type',
    ]);
    const internals = [
      'given_names',
      'not-a-list',
      'givenNames',
      'stack',
      'SELECT',
      'patients',
      '.ts',
      'TypeError',
    ];
    for (const word of [...internals, 'schema', 'serializ', 'jsonb']) {
      assert.ok(!failed.text.includes(word), `the answer mentions ${word}: ${failed.text}`);
    }
  });
});
