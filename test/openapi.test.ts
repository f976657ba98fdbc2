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

  test('the docs page is served locally', async () => {
    const page = await fetch(`${svc.baseUrl}/docs/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /swagger/i);
    assert.doesNotMatch(html, /https?:\/\/(?:cdn|unpkg|cdnjs)/);
  });
});
