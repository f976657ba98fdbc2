// The processes that face the internet with only the service's login: a non-superuser owner creates
// and migrates the database and grants the service roles to a login of their own; `serve` and `worker`
// with only that login's URL start on the migrated database (no DDL, no migration lock), serve the API
// and the admin API, and refuse with a clear message while a migration is pending.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { remotePractice } from './child-service.ts';
import { call } from './harness.ts';
import { BIN, childEnv, cli, freePort, NODE, ROOT, run, trackChild } from './processes.ts';
import { queryAs, urlFor } from './support/operator-scene.ts';

const SUPER = process.env.DATABASE_URL;
const TOKEN = `adm_least_${randomBytes(16).toString('hex')}`;
const LAST = '0026_migration_table_readable';

function startProcess(command: string, env: NodeJS.ProcessEnv) {
  const child = spawn(NODE, [BIN, command], { cwd: ROOT, env, stdio: 'pipe' });
  trackChild(child, `practice-billing ${command}`);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  return { child, exited, output: () => output, running: () => exitCode === undefined };
}

describe('serve and worker with only the service login (postgres)', {
  skip: SUPER ? false : 'needs DATABASE_URL',
}, () => {
  const owner = `pb_own_${randomBytes(5).toString('hex')}`;
  const login = `pb_svc_${randomBytes(5).toString('hex')}`;
  const database = `pb_lp_${randomBytes(5).toString('hex')}`;
  before(async () => {
    await queryAs(SUPER!, `CREATE ROLE ${owner} LOGIN CREATEROLE CREATEDB`);
  });
  after(async () => {
    await queryAs(SUPER!, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    for (const role of [login, owner]) {
      await queryAs(SUPER!, `DROP OWNED BY ${role}`).catch(() => {});
      await queryAs(SUPER!, `DROP ROLE IF EXISTS ${role}`);
    }
  });

  test('start on the migrated database; refuse while a migration is pending', {
    timeout: 300_000,
  }, async () => {
    const url = new URL(SUPER!);
    const created = await run(
      'createdb',
      ['-h', url.hostname, '-p', url.port || '5432', '-U', owner, database],
      childEnv(),
    );
    assert.equal(created.code, 0, created.stderr);
    const ownerUrl = urlFor(owner, database);
    const migrated = await cli(['migrate'], childEnv({ DATABASE_URL: ownerUrl }), 120_000);
    assert.equal(migrated.code, 0, migrated.stderr);
    await queryAs(ownerUrl, `CREATE ROLE ${login} LOGIN`);
    await queryAs(ownerUrl, `GRANT practice_billing_app, practice_billing_operator TO ${login}`);

    const port = await freePort();
    const env = childEnv({
      DATABASE_URL: urlFor(login, database),
      ADMIN_TOKEN: TOKEN,
      PORT: String(port),
      LOG_LEVEL: 'info',
    });

    // A pending migration: the service login neither migrates nor starts, and says what to do.
    await queryAs(ownerUrl, `DELETE FROM kysely_migration WHERE name = '${LAST}'`);
    for (const command of ['serve', 'worker']) {
      const refused = await cli([command], env, 120_000);
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, new RegExp(`migrations pending for this build \\(${LAST}\\)`));
      assert.match(refused.stderr, /practice-billing migrate/);
    }
    await queryAs(
      ownerUrl,
      `INSERT INTO kysely_migration (name, timestamp) VALUES ('${LAST}', '2026-12-06T00:00:00.000Z')`,
    );

    const serve = startProcess('serve', env);
    const worker = startProcess('worker', env);
    try {
      const deadline = Date.now() + 120_000;
      while (serve.running() && !serve.output().includes('Server listening')) {
        assert.ok(Date.now() < deadline, serve.output());
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(serve.running(), `serve exited:\n${serve.output()}`);
      const baseUrl = `http://127.0.0.1:${port}`;
      assert.equal((await call(baseUrl, 'GET', '/readyz')).status, 200);
      const practice = await remotePractice(baseUrl, TOKEN);
      const patient = await call(baseUrl, 'POST', '/api/v1/patients', {
        token: practice.key,
        idempotencyKey: randomBytes(8).toString('hex'),
        body: {
          givenNames: ['Naledi'],
          lastName: 'Mokoena',
          birthDate: '1988-04-12',
          externalId: { system: 'urn:test:mrn', value: randomBytes(6).toString('hex') },
        },
      });
      assert.equal(patient.status, 201, patient.text);
      const read = await call(baseUrl, 'GET', `/api/v1/patients/${patient.body.id}`, { token: practice.key });
      assert.equal(read.status, 200, read.text);
      assert.ok(worker.running(), `the worker exited:\n${worker.output()}`);
      serve.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      assert.equal(await serve.exited, 0, serve.output());
      assert.equal(await worker.exited, 0, worker.output());
      assert.doesNotMatch(`${serve.output()}${worker.output()}`, /permission denied/);
    } finally {
      serve.child.kill('SIGKILL');
      worker.child.kill('SIGKILL');
    }
  });
});
