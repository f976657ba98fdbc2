// The client package as a user gets it: `npm pack` in packages/client (its `prepack` builds dist/)
// makes a tarball holding the compiled JavaScript, the declarations, README, CHANGELOG and the MIT
// LICENSE, and no source or dependency; it installs offline into an empty project; the machine's own
// Node 20 (which cannot read TypeScript) imports it, creates and reads a patient on the real service
// and verifies a signed webhook with the runtime's crypto; and a strict TypeScript file type-checks
// against its declarations with the repository's tsc. The install and import are skipped where no
// Node 20 to 23 is installed beside the project's Node 24. Embedded database only.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startService, type TestService } from './harness.ts';
import { childEnv, ROOT, tempDir } from './processes.ts';

const PACKAGE = path.join(ROOT, 'packages', 'client');
const TSC = path.join(ROOT, 'node_modules', '.bin', 'tsc');
/** npm and the scripts it runs see the project's Node first, as they do under `npm run`. */
const ENV = {
  ...childEnv(),
  PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}`,
};

function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      const major = Number(/^v(\d+)\./.exec(version)?.[1]);
      if (major >= 20 && major < 24) return candidate;
    } catch {}
  }
  return undefined;
}

const NODE20 = olderNode();
let copy: string | undefined;

/**
 * The package's sources copied under the repository's .tmp, where `npm pack` (its prepack builds
 * dist/) runs: the repository's own packages/client/dist, which other tests running at the same time
 * import, is never deleted and rebuilt under them.
 */
function packageCopy(): string {
  copy = path.join(ROOT, '.tmp', `client-pack-${process.pid}`);
  fs.rmSync(copy, { recursive: true, force: true });
  fs.cpSync(PACKAGE, copy, {
    recursive: true,
    filter: (from) => !['node_modules', 'dist'].includes(path.basename(from)),
  });
  // The package's own dev dependencies (its TypeScript, whose build script it resolves), as in place.
  fs.symlinkSync(path.join(PACKAGE, 'node_modules'), path.join(copy, 'node_modules'));
  return copy;
}
let svc: TestService;
let work: string;
let tarball: string;
let project: string;

before(async () => {
  svc = await startService('pglite');
  work = tempDir('client-package');
  const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', work], {
    cwd: packageCopy(),
    env: ENV,
    encoding: 'utf8',
  });
  tarball = path.join(work, packed.trim().split('\n').at(-1)!);
  project = path.join(work, 'consumer');
  fs.mkdirSync(project);
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], {
    cwd: project,
    env: ENV,
    encoding: 'utf8',
  });
});
after(async () => {
  await svc.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
  if (copy) fs.rmSync(copy, { recursive: true, force: true });
});

test('the tarball holds the build, the declarations, the documents and the licence, and no source', () => {
  const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const file of [
    'dist/index.js',
    'dist/index.d.ts',
    'README.md',
    'CHANGELOG.md',
    'LICENSE',
    'package.json',
  ])
    assert.ok(listing.includes(`package/${file}`), `${file} is packed: ${listing.join(' ')}`);
  assert.deepEqual(
    listing.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    [],
    'no TypeScript source',
  );
  const installed = path.join(project, 'node_modules', '@practice-billing', 'client');
  const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
  assert.equal(manifest.license, 'MIT');
  assert.match(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8'), /^MIT License/);
  assert.equal(manifest.dependencies, undefined, 'no runtime dependency to fetch');
  assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
  assert.match(
    fs.readFileSync(path.join(installed, 'CHANGELOG.md'), 'utf8'),
    new RegExp(`## ${manifest.version.replaceAll('.', '\\.')}`),
  );
});

test('installed, it runs on Node 20 against the service and verifies a webhook', {
  skip: NODE20 ? false : 'no Node 20 to 23 here',
}, async () => {
  const practice = await svc.newPractice();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const body = JSON.stringify({
    id: 'evt_1',
    type: 'invoice.issued',
    occurredAt: new Date().toISOString(),
    data: { object: 'invoice', id: 'inv_1', url: null },
  });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`evt_1.${timestamp}.${body}`)
    .digest('base64');
  fs.writeFileSync(
    path.join(project, 'session.mjs'),
    `import { PracticeBilling, ProblemError } from '@practice-billing/client';
const client = new PracticeBilling({ apiKey: process.env.API_KEY, baseUrl: process.env.BASE });
const made = await client.patients.create({ givenNames: ['Sipho'], lastName: 'Mokoena', birthDate: '1979-11-03' });
const read = await client.patients.get(made.id);
const missing = await client.invoices.get('inv_none0000000000000000').catch((e) => e);
const event = client.webhooks.verify(process.env.BODY, { 'webhook-id': 'evt_1', 'webhook-timestamp': process.env.TS, 'webhook-signature': 'v1,' + process.env.SIG }, process.env.SECRET);
console.log(JSON.stringify({ node: process.version, id: read.id, same: read.id === made.id, problem: missing instanceof ProblemError && missing.code, event: event.type }));
`,
  );
  const { stdout } = await promisify(execFile)(NODE20!, ['session.mjs'], {
    cwd: project,
    env: {
      ...ENV,
      BASE: svc.baseUrl,
      API_KEY: practice.key,
      BODY: body,
      TS: timestamp,
      SIG: signature,
      SECRET: secret,
    },
    timeout: 30_000,
  });
  const out = JSON.parse(stdout.trim());
  assert.match(out.node, /^v2[0-3]\./);
  assert.match(out.id, /^pat_/);
  assert.equal(out.same, true);
  assert.equal(out.problem, 'not_found');
  assert.equal(out.event, 'invoice.issued');
});

test('a strict TypeScript program type-checks against the installed declarations', async () => {
  fs.writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['es2022', 'dom'],
        types: [],
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
      },
      include: ['consumer.ts'],
    }),
  );
  fs.writeFileSync(
    path.join(project, 'consumer.ts'),
    `import { type Event, PracticeBilling, ProblemError, type Invoice } from '@practice-billing/client';
const client = new PracticeBilling({ apiKey: 'pbk_x', baseUrl: 'https://billing.example.org', maxRetryAfterMs: 30_000 });
export async function firstCall(): Promise<string> {
  const patient = await client.patients.create({ givenNames: ['A'], lastName: 'B', birthDate: '2000-01-01' });
  for await (const invoice of client.invoices.list({ status: 'issued' })) {
    const total: number = invoice.totalGross;
    void total;
  }
  const cancelled: Invoice = await client.invoices.cancel('inv_x', { reason: 'duplicate' });
  void cancelled;
  // @ts-expect-error lastName is required
  await client.patients.create({ givenNames: ['A'], birthDate: '2000-01-01' });
  return patient.id;
}
export function onEvent(event: Event): string | undefined {
  if (event.type === 'payment.created') return event.data.payment?.id;
  if (event.type === 'claim.status_changed') return event.data.claim?.status;
  return event.data.id;
}
export function isProblem(error: unknown): boolean {
  return error instanceof ProblemError && error.status === 404;
}
`,
  );
  const result = await promisify(execFile)(TSC, ['-p', path.join(project, 'tsconfig.json')], {
    cwd: project,
    env: ENV,
  }).catch((error: { stdout: string; stderr: string }) => error);
  assert.equal('code' in result ? result.code : 0, 0, `${result.stdout}${result.stderr}`);
});
