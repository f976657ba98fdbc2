import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openApiDocument, serialiseDocument } from '../src/docs/openapi-document.ts';
import { startService, type TestService } from './harness.ts';

const committedPath = path.resolve(import.meta.dirname, '..', 'docs', 'openapi.json');

describe('OpenAPI document', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService('pglite');
  });
  after(async () => {
    await svc.close();
  });

  test('the committed docs/openapi.json matches the route schemas (run `npm run openapi` after changing them)', async () => {
    const generated = serialiseDocument(await openApiDocument());
    assert.equal(fs.readFileSync(committedPath, 'utf8'), generated);
  });

  test('the server serves the same document at /api/v1/openapi.json', async () => {
    const served = await fetch(`${svc.baseUrl}/api/v1/openapi.json`);
    assert.equal(served.status, 200);
    assert.deepEqual(await served.json(), JSON.parse(fs.readFileSync(committedPath, 'utf8')));
  });

  test('every public operation declares its permission, a Problem for errors, and an operationId', () => {
    const document = JSON.parse(fs.readFileSync(committedPath, 'utf8')) as {
      paths: Record<
        string,
        Record<string, { operationId?: string; 'x-permission'?: string; responses: Record<string, unknown> }>
      >;
    };
    const operations = Object.entries(document.paths).filter(([p]) => p.startsWith('/api/v1/'));
    assert.ok(operations.length > 0);
    for (const [p, methods] of operations) {
      for (const [method, op] of Object.entries(methods)) {
        assert.ok(op.operationId, `${method} ${p} has an operationId`);
        assert.match(
          op['x-permission'] ?? '',
          /^[A-Z_]+:(CREATE|READ|UPDATE|EXECUTE|SUBMIT)$/,
          `${method} ${p}`,
        );
        assert.ok(op.responses['401'] && op.responses['403'], `${method} ${p} documents 401 and 403`);
      }
    }
  });

  test('every public answer declares X-Request-Id and the X-RateLimit headers; creates declare Location and replays', () => {
    type Operation = {
      parameters?: Array<{ in: string; name: string }>;
      responses: Record<string, { headers?: Record<string, { $ref?: string }> }>;
    };
    const document = JSON.parse(fs.readFileSync(committedPath, 'utf8')) as {
      paths: Record<string, Record<string, Operation>>;
      components: { headers?: Record<string, unknown> };
    };
    const declared = (op: Operation, status: string) => Object.keys(op.responses[status]?.headers ?? {});
    let creates = 0;
    for (const [p, methods] of Object.entries(document.paths).filter(([p]) => p.startsWith('/api/v1/'))) {
      for (const [method, op] of Object.entries(methods)) {
        for (const status of Object.keys(op.responses)) {
          for (const header of [
            'X-Request-Id',
            'X-RateLimit-Limit',
            'X-RateLimit-Remaining',
            'X-RateLimit-Reset',
          ])
            assert.ok(declared(op, status).includes(header), `${method} ${p} ${status} declares ${header}`);
          for (const ref of Object.values(op.responses[status]?.headers ?? {}))
            assert.ok(
              document.components.headers?.[ref.$ref?.split('/').pop() ?? ''],
              `${method} ${p} ${status}: ${ref.$ref} resolves`,
            );
        }
        if (op.responses['201']) {
          creates += 1;
          assert.ok(declared(op, '201').includes('Location'), `${method} ${p} 201 declares Location`);
        }
        if (op.parameters?.some((q) => q.in === 'header' && q.name === 'idempotency-key')) {
          const success = Object.keys(op.responses).find((s) => s.startsWith('2'))!;
          assert.ok(declared(op, success).includes('Idempotent-Replayed'), `${method} ${p} declares replays`);
        }
        if (op.responses['429']) assert.ok(declared(op, '429').includes('Retry-After'), `${method} ${p} 429`);
      }
    }
    assert.ok(creates >= 5, `creating operations found: ${creates}`);
  });

  test('the docs page is served locally', async () => {
    const page = await fetch(`${svc.baseUrl}/docs/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /swagger/i);
    assert.doesNotMatch(html, /https?:\/\/(?:cdn|unpkg|cdnjs)/);
  });
});
