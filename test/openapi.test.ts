import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { EXAMPLES } from '../src/docs/openapi-examples.ts';
import { openApiDocument, serialiseDocument } from '../src/openapi-document.ts';
import { startService, type TestService } from './harness.ts';
import { dereference } from './openapi-refs.ts';

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

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
          /^[A-Z_]+:(CREATE|READ|UPDATE|EXECUTE|SUBMIT|EXPORT)$/,
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
    const raw = JSON.parse(fs.readFileSync(committedPath, 'utf8')) as {
      paths: Record<string, Record<string, Operation>>;
      components: { headers?: Record<string, unknown> };
    };
    for (const [p, methods] of Object.entries(raw.paths).filter(([p]) => p.startsWith('/api/v1/')))
      for (const [method, op] of Object.entries(methods))
        for (const [status, response] of Object.entries(op.responses))
          for (const ref of Object.values(response.headers ?? {}))
            assert.ok(
              raw.components.headers?.[ref.$ref?.split('/').pop() ?? ''],
              `${method} ${p} ${status}: ${ref.$ref} resolves`,
            );
    const document = dereference(raw);
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

  test('named schemas are components referenced with $ref, each defined once, with examples that fit them', () => {
    const text = fs.readFileSync(committedPath, 'utf8');
    const document = JSON.parse(text) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { examples?: unknown[] }>; responses: Record<string, unknown> };
    };
    // A bound on the whole, against schemas copied inline again: about 545 KB with every operation
    // (the payment and refund routes, the patient's record and erasure, the practice's account details
    // and the list of time zones among them).
    assert.ok(text.length < 600_000, `the document is ${text.length} bytes`);
    for (const name of ['Patient', 'PatientRequest', 'Encounter', 'Invoice', 'Claim', 'Coverage', 'Problem'])
      assert.ok(document.components.schemas[name], `${name} is a component`);
    // no schema with a name is copied into an operation
    const inline: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const title = (node as { title?: unknown }).title;
      if (typeof title === 'string' && 'type' in node) inline.push(`${where}: ${title}`);
      for (const [key, value] of Object.entries(node)) if (key !== 'examples') walk(value, `${where}/${key}`);
    };
    walk(document.paths, '#/paths');
    assert.deepEqual(inline, []);
    assert.equal(text.match(/"code": \{\s*"type": "string",\s*"enum": \[\s*"invalid_request"/g)?.length, 1);
    const problem404 = dereference(document).components.responses.Problem404 as {
      content: { 'application/json': { schema: { title: string } } };
    };
    assert.equal(problem404.content['application/json'].schema.title, 'Problem');

    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    const schemas = dereference(document).components.schemas;
    for (const name of Object.keys(EXAMPLES))
      assert.ok(schemas[name]?.examples, `examples of ${name} are shown`);
    const withExamples = Object.entries(schemas).filter(([, schema]) => schema.examples);
    assert.ok(withExamples.length >= 10, `examples for ${withExamples.map(([n]) => n).join(', ')}`);
    for (const [name, schema] of withExamples) {
      const validate = ajv.compile(schema);
      for (const example of schema.examples ?? [])
        assert.ok(validate(example), `${name} example: ${ajv.errorsText(validate.errors)}`);
    }
  });

  test('every response is described, every tag is declared with a description; servers and licence are set', () => {
    const document = JSON.parse(fs.readFileSync(committedPath, 'utf8')) as {
      info: { license?: { name: string } };
      servers?: Array<{ url: string }>;
      tags: Array<{ name: string; description?: string }>;
      paths: Record<
        string,
        Record<string, { tags?: string[]; responses: Record<string, { description?: string }> }>
      >;
    };
    assert.ok(document.info.license?.name);
    assert.ok((document.servers ?? []).length > 0);
    const declared = new Map(document.tags.map((t) => [t.name, t.description ?? '']));
    for (const [p, methods] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const tag of op.tags ?? [])
          assert.ok(declared.get(tag), `${method} ${p}: tag ${tag} is declared`);
        for (const [status, response] of Object.entries(op.responses)) {
          if ('$ref' in response) continue;
          assert.ok(
            response.description && response.description !== 'Default Response',
            `${method} ${p} ${status}`,
          );
        }
      }
    }
  });

  test('the document states what the service checks: text without NUL or unpaired surrogates, the performer id, the find parameters', () => {
    const document = dereference(JSON.parse(fs.readFileSync(committedPath, 'utf8'))) as {
      components: { schemas: Record<string, { properties: Record<string, { pattern?: string }> }> };
      paths: Record<
        string,
        Record<
          string,
          { parameters?: Array<{ name: string; required?: boolean; schema: { pattern?: string } }> }
        >
      >;
    };
    const text = document.components.schemas.PatientRequest!.properties.lastName!.pattern;
    assert.ok(text, 'free text states its pattern');
    const storable = new RegExp(text, 'u');
    for (const refused of ['\u0000', 'a\u0000b', '\uD800', 'x\uDFFF\uD800'])
      assert.equal(storable.test(refused), false, JSON.stringify(refused));
    for (const accepted of ['', 'Dlamini', '𝄞'.repeat(3), 'é', '\u{10FFFF}'])
      assert.equal(storable.test(accepted), true, JSON.stringify(accepted));

    const create = document.paths['/api/v1/patients']!.post!;
    const performer = create.parameters!.find((p) => p.name === 'x-service-performer')!;
    const performerPattern = new RegExp(performer.schema.pattern ?? '');
    assert.ok(performerPattern.test('prt_3B90kJBAmEmYdrQsFYCr12'));
    assert.ok(!performerPattern.test('pat_3B90kJBAmEmYdrQsFYCr12'));
    const find = document.paths['/api/v1/patients']!.get!.parameters!;
    assert.deepEqual(
      find.filter((p) => p.name.startsWith('external')).map((p) => [p.name, p.required]),
      [
        ['externalSystem', true],
        ['externalId', true],
      ],
    );
  });

  test('Redocly CLI lints the document clean: no errors, no warnings', () => {
    const cli = path.resolve(import.meta.dirname, '..', 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
    const run = spawnSync(process.execPath, [cli, 'lint', committedPath, '--format=stylish'], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      timeout: 60_000,
    });
    const output = `${run.stdout}${run.stderr}`;
    assert.equal(run.status, 0, output);
    assert.doesNotMatch(output, /warning|error/i, output);
  });

  test('the docs page is served locally', async () => {
    const page = await fetch(`${svc.baseUrl}/docs/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /swagger/i);
    assert.doesNotMatch(html, /https?:\/\/(?:cdn|unpkg|cdnjs)/);
  });
});
