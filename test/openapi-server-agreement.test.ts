// The OpenAPI document and the server agree: a JSON null is refused where the document says a body is
// required (400 naming the body), and values the document's schemas accept for a practice's timezone,
// a client's allowedIps, a webhook url and a code system's name (generated from the schema itself) are
// accepted by the server, while values they refuse are refused.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import {
  call,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { dereference } from './openapi-refs.ts';
import { refusedWith } from './support/refusals.ts';

// biome-ignore lint/suspicious/noExplicitAny: the parsed document, read field by field
type Json = Record<string, any>;
const document = dereference(
  JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '..', 'docs', 'openapi.json'), 'utf8')),
) as Json;

/** The request body schema of an operation, from the document. */
function bodySchema(p: string, method: string): Json {
  return document.paths[p][method].requestBody.content['application/json'].schema;
}

/** Runs `property` on `runs` values generated from a string schema's pattern, within its lengths. */
function samplesOf(schema: Json, runs: number): string[] {
  const pattern = new RegExp(schema.pattern);
  return fc.sample(
    fc
      .stringMatching(pattern)
      .filter((v) => v.length >= (schema.minLength ?? 0) && v.length <= (schema.maxLength ?? Infinity)),
    { numRuns: runs, seed: 25 },
  );
}

describeEachBackend('the OpenAPI document and the server agree', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  before(async () => {
    svc = await startService(backend, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    practice = await svc.newPractice();
  });
  after(async () => {
    await svc.close();
  });

  test('a JSON null where the document requires a body is 400 naming body', async () => {
    let checked = 0;
    for (const [p, item] of Object.entries(document.paths as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!operation?.requestBody?.required) continue;
        const admin = p.startsWith('/admin/');
        const answer = await call(svc.baseUrl, method.toUpperCase(), p.replace(/\{[^}]+\}/g, 'x_unknown'), {
          token: admin ? svc.adminToken : practice.key,
          rawBody: 'null',
          headers: { 'content-type': 'application/json', 'idempotency-key': uniqueKey() },
        });
        refusedWith(answer, 400, 'invalid_request', ['body']);
        checked += 1;
      }
    }
    assert.ok(checked > 20, `${checked} operations checked`);
    // Where the body is optional, null counts as none.
    const optional = await call(svc.baseUrl, 'POST', '/api/v1/invoices/inv_unknown/issue', {
      token: practice.key,
      rawBody: 'null',
      headers: { 'content-type': 'application/json' },
    });
    refusedWith(optional, 404, 'not_found');
  });

  test('every time zone the document lists is accepted for a practice; others are refused', async () => {
    const zones: string[] = bodySchema('/admin/v1/practices', 'post').properties.timezone.enum;
    assert.ok(zones.includes('Africa/Johannesburg') && zones.includes('UTC'));
    // Every 7th zone, so each run covers the list's whole range.
    for (const timezone of zones.filter((_, i) => i % 7 === 0)) {
      const answer = await svc.admin('POST', '/practices', { name: 'Zone test', timezone });
      assert.equal(answer.status, 201, `${timezone}: ${answer.text}`);
      assert.equal(answer.body.timezone, timezone);
    }
    for (const timezone of ['Mars/Olympus_Mons', 'africa/johannesburg', 'Etc/GMT+2', '']) {
      const answer = await svc.admin('POST', '/practices', { name: 'Zone test', timezone });
      refusedWith(answer, 422, 'validation_failed', ['timezone']);
    }
  });

  test('allowedIps the schema accepts are accepted; forms it refuses are refused', async () => {
    const item = bodySchema('/admin/v1/practices/{practiceId}/clients', 'post').properties.allowedIps.items;
    const values = samplesOf(item, 60);
    const created = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
      name: 'Addresses',
      permissions: [],
      allowedIps: [...new Set([...values, '10.0.0.0/8', '2001:db8::/32', '::ffff:10.1.2.3'])],
    });
    assert.equal(created.status, 201, created.text);
    for (const wrong of ['127.1', '010.0.0.1', '10.0.0.0/33', '::1/129', 'fe80::1%eth0', 'example.com']) {
      const refused = await svc.admin('POST', `/practices/${practice.practiceId}/clients`, {
        name: 'Addresses',
        permissions: [],
        allowedIps: [wrong],
      });
      refusedWith(refused, 422, 'validation_failed', ['allowedIps.0']);
    }
  });

  test('a webhook url the schema accepts is accepted (with WEBHOOK_ALLOW_PRIVATE); others are refused', async () => {
    const url = bodySchema('/admin/v1/practices/{practiceId}/webhook-endpoints', 'post').properties.url;
    // With WEBHOOK_ALLOW_PRIVATE no host is looked up, so any the pattern accepts can be registered.
    const urls = samplesOf(url, 25);
    for (const sample of [...urls, 'http://127.0.0.1:8080/hooks?x=1', 'https://[::1]/h@x']) {
      const answer = await svc.admin('POST', `/practices/${practice.practiceId}/webhook-endpoints`, {
        url: sample,
      });
      assert.equal(answer.status, 201, `${sample}: ${answer.text}`);
    }
    for (const wrong of [
      'ftp://127.0.0.1/x',
      'https://user:pw@127.0.0.1/',
      'https://127.0.0.1:70000/',
      '127.0.0.1/x',
      'https://1.2.3',
    ]) {
      const answer = await svc.admin('POST', `/practices/${practice.practiceId}/webhook-endpoints`, {
        url: wrong,
      });
      refusedWith(answer, 422, 'validation_failed', ['url']);
    }
  });

  test('a code system name the schema accepts is accepted; one without a letter or digit is refused', async () => {
    const name = bodySchema('/api/v1/code-systems', 'post').properties.name;
    const api = (body: unknown) =>
      call(svc.baseUrl, 'POST', '/api/v1/code-systems', {
        token: practice.key,
        body,
        idempotencyKey: uniqueKey(),
      });
    const names = fc.sample(
      fc
        .string({ minLength: name.minLength, maxLength: name.maxLength, unit: 'grapheme' })
        .filter((v) => new RegExp(name.pattern).test(v)),
      { numRuns: 15, seed: 25 },
    );
    for (const [i, sample] of names.entries()) {
      // A suffix keeps the generated names' urls apart.
      const answer = await api({
        name: `${sample.slice(0, name.maxLength - 4)} ${i}x`,
        usage: ['procedure'],
      });
      assert.equal(answer.status, 201, `${JSON.stringify(sample)}: ${answer.text}`);
    }
    for (const wrong of ['---', 'é', '日本']) {
      refusedWith(await api({ name: wrong, usage: ['procedure'] }), 422, 'validation_failed', ['name']);
    }
  });
});
