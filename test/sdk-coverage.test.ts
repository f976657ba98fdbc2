// Every public operation of the OpenAPI document (docs/openapi.json, /api/v1) has a method in the
// client package: each resource method names its operation's path template and method in its
// `http.call`, and those are read from packages/client/src/resources/. What has no method would only
// be reachable through the escape hatch, `client.http.call`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const RESOURCES = path.join(ROOT, 'packages', 'client', 'src', 'resources');

test('every public API operation has a client method', () => {
  const document = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs', 'openapi.json'), 'utf8')) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const operations = Object.entries(document.paths)
    .filter(([p]) => p.startsWith('/api/v1/'))
    .flatMap(([p, methods]) =>
      Object.entries(methods)
        .filter(([, o]) => o.operationId)
        .map(([m, o]) => ({ id: o.operationId!, call: `${m} ${p}` })),
    );
  assert.ok(operations.length > 30, `the public operations were found (${operations.length})`);
  const called = new Set<string>();
  for (const file of fs.readdirSync(RESOURCES)) {
    const source = fs.readFileSync(path.join(RESOURCES, file), 'utf8');
    for (const match of source.matchAll(/\.call\(\s*'(\w+)',\s*'([^']+)'/g))
      called.add(`${match[1]} ${match[2]}`);
  }
  const missing = operations.filter((o) => !called.has(o.call)).map((o) => `${o.id} (${o.call})`);
  assert.deepEqual(missing, [], 'operations without a client method');
  const unknown = [...called].filter((c) => !operations.some((o) => o.call === c));
  assert.deepEqual(unknown, [], 'client methods calling no operation of the document');
});
