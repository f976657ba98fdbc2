// The client package works in a browser bundle: esbuild bundles it for the browser (a Node built-in
// anywhere in it fails the build), and the bundle, run in a bare JavaScript context given only what a
// browser has (fetch, URL, AbortSignal, Web Crypto, TextEncoder, timers), creates and reads a patient
// on the real service. Embedded database only: it is about the bundle, not the database.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import vm from 'node:vm';
import { build } from 'esbuild';
import { startService, type TestService } from './harness.ts';

const ENTRY = path.resolve(import.meta.dirname, '..', 'packages', 'client', 'src', 'index.ts');

let svc: TestService;
before(async () => {
  svc = await startService('pglite');
});
after(async () => {
  await svc.close();
});

test('the browser bundle has no Node built-in and runs with browser globals only', async () => {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'PracticeBillingClient',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.deepEqual(
    inputs.filter((i) => i.includes('node_modules')),
    [],
    'the package bundles nothing but its own code: it has no dependency',
  );
  assert.deepEqual(
    inputs.filter((i) => i.startsWith('node:')),
    [],
  );
  const code = result.outputFiles[0]!.text;

  const practice = await svc.newPractice();
  const context = vm.createContext({
    fetch,
    Headers,
    Request,
    Response,
    URL,
    URLSearchParams,
    AbortController,
    AbortSignal,
    TextEncoder,
    TextDecoder,
    crypto: globalThis.crypto,
    setTimeout,
    clearTimeout,
    baseUrl: svc.baseUrl,
    apiKey: practice.key,
  });
  vm.runInContext(code, context);
  assert.equal(
    vm.runInContext('typeof process + typeof require + typeof Buffer', context),
    'undefinedundefinedundefined',
  );
  const read = (await vm.runInContext(
    `(async () => {
      const client = new PracticeBillingClient.PracticeBilling({ apiKey, baseUrl });
      const made = await client.patients.create({ givenNames: ['Ama'], lastName: 'Mensah', birthDate: '1985-06-01' });
      const read = await client.patients.get(made.id);
      let problem;
      try { await client.invoices.get('inv_none0000000000000000'); } catch (e) { problem = e; }
      return { id: made.id, readId: read.id, lastName: read.lastName, code: problem.code, isProblem: problem instanceof PracticeBillingClient.ProblemError };
    })()`,
    context,
  )) as Record<string, unknown>;
  assert.match(String(read.id), /^pat_/);
  assert.equal(read.readId, read.id);
  assert.equal(read.lastName, 'Mensah');
  assert.equal(read.code, 'not_found');
  assert.equal(read.isProblem, true);
});
