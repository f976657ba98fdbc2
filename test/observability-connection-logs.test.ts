// A lost database connection and a lost LISTEN connection are each logged once, at warn, with what the
// process does meanwhile, and once more when they are back: a `practice-billing worker` process whose
// connections PostgreSQL terminates (pg_terminate_backend, as a restart or a failover would). Needs
// DATABASE_URL.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startWorkerProcess, type WorkerProcess } from './child-service.ts';
import { startService, type TestService } from './harness.ts';

async function until(
  what: string,
  ok: () => boolean,
  output: () => string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const count = (text: string, message: string) =>
  text.split('\n').filter((line) => line.includes(`"msg":"${message}`)).length;

describe('lost connections in the log (postgres)', { skip: !process.env.DATABASE_URL }, () => {
  let svc: TestService;
  let worker: WorkerProcess;
  let admin: pg.Client;

  before(async () => {
    svc = await startService('postgres');
    assert.ok(svc.databaseUrl);
    worker = startWorkerProcess({ databaseUrl: svc.databaseUrl, env: { LOG_LEVEL: 'warn' } });
    admin = new pg.Client({ connectionString: svc.databaseUrl });
    await admin.connect();
  });
  after(async () => {
    await admin?.end();
    await worker?.stop();
    await svc?.close();
  });

  const terminate = (applicationName: string) =>
    admin.query(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1`,
      [applicationName],
    );

  test('the LISTEN connection: lost once at warn, re-established once', async () => {
    let terminated = 0;
    for (let i = 0; i < 100 && terminated === 0; i++) {
      terminated = (await terminate('practice-billing-worker-listen')).rows[0].n;
      if (terminated === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(terminated > 0, worker.output());
    await until(
      'LISTEN to come back',
      () => count(worker.output(), 'LISTEN connection re-established') === 1,
      worker.output,
    );
    const out = worker.output();
    assert.equal(count(out, 'LISTEN connection lost'), 1, out);
    const lost = JSON.parse(out.split('\n').find((line) => line.includes('LISTEN connection lost'))!);
    assert.equal(lost.level, 40, 'at warn');
    assert.match(lost.msg, /reconnecting/);
  });

  test('the pool: lost once at warn however many connections went, re-established once', async () => {
    let terminated = 0;
    for (let i = 0; i < 100 && terminated === 0; i++) {
      terminated = (await terminate('practice-billing-worker')).rows[0].n;
      if (terminated === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(terminated > 0, worker.output());
    // The worker's periodic work opens a new connection within a second or two.
    await until(
      'a new connection',
      () => count(worker.output(), 'database connection re-established') === 1,
      worker.output,
    );
    const out = worker.output();
    assert.equal(count(out, 'database connection lost'), 1, out);
    const lost = JSON.parse(out.split('\n').find((line) => line.includes('database connection lost'))!);
    assert.equal(lost.level, 40, 'at warn');
    assert.equal(lost.pool, 'practice-billing-worker');
    assert.match(lost.msg, /503/);
  });
});
