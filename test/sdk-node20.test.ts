// The published build of the client package runs on Node 20: `npm run build -w @practice-billing/client`
// output (JavaScript compiled by tsc) is loaded by the machine's own older Node, which cannot read
// TypeScript, and creates and reads a patient on the real service. Skipped where no Node 20 to 23 is
// installed beside the project's Node 24. Embedded database only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { buildPackage } from '../packages/client/scripts/build.ts';
import { startService, type TestService } from './harness.ts';
import { ROOT, run } from './processes.ts';

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

const NODE = olderNode();
let svc: TestService;
before(async () => {
  svc = await startService('pglite');
});
after(async () => {
  await svc.close();
});

test('the built package runs on Node 20 against the service', {
  skip: NODE ? false : 'no Node 20 to 23 here',
}, async () => {
  // Inside the repository, so that the build finds standardwebhooks in node_modules as an install would.
  const outDir = path.join(ROOT, '.tmp', `client-build-${randomBytes(4).toString('hex')}`);
  try {
    buildPackage(outDir);
    assert.ok(!fs.readdirSync(outDir).some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')));
    const practice = await svc.newPractice();
    fs.writeFileSync(
      path.join(outDir, 'session.mjs'),
      `import { PracticeBilling, ProblemError } from './index.js';
const client = new PracticeBilling({ apiKey: process.env.API_KEY, baseUrl: process.env.BASE });
const made = await client.patients.create({ givenNames: ['Sipho'], lastName: 'Mokoena', birthDate: '1979-11-03' });
const read = await client.patients.get(made.id);
const missing = await client.invoices.get('inv_none0000000000000000').catch((e) => e);
console.log(JSON.stringify({ node: process.version, id: read.id, same: read.id === made.id, problem: missing instanceof ProblemError && missing.code }));
`,
    );
    const result = await run(
      NODE!,
      [path.join(outDir, 'session.mjs')],
      { ...process.env, BASE: svc.baseUrl, API_KEY: practice.key },
      30_000,
    );
    assert.equal(result.code, 0, result.stderr);
    const out = JSON.parse(result.stdout.trim()) as {
      node: string;
      id: string;
      same: boolean;
      problem: string;
    };
    assert.match(out.node, /^v2[0-3]\./);
    assert.match(out.id, /^pat_/);
    assert.equal(out.same, true);
    assert.equal(out.problem, 'not_found');
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
});
