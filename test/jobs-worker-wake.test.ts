// A worker wakes when a commit queues a job instead of waiting for its next poll: in the process that
// committed (an in-process signal, both databases), and in another process (a NOTIFY sent after the
// commit, PostgreSQL). The poll interval is set to a minute, so an answer within seconds can only
// come from the wake-up.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { issuedInvoice, newWorld, sendClaim, type World } from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { BIN, childEnv, NODE, ROOT, trackChild } from './processes.ts';

const MINUTE_POLL = { JOB_POLL_MS: '60000', INSURER_DELAY_MS: '0', REMITTANCE_DELAY_MS: '0' };

async function answeredWithin(w: World, invoiceId: string, ms: number, why: () => string): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const claim = await w.api('GET', `/invoices/${invoiceId}/claim`);
    assert.equal(claim.status, 200, claim.text);
    if (claim.body.status !== 'submitting') return claim.body.status as string;
    assert.ok(Date.now() < deadline, `the claim was not answered within ${ms} ms${why()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describeEachBackend('worker wakes on a queued job', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend, { workerPolls: true, env: MINUTE_POLL });
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  test('a claim queued by a request is answered at once by the same process', async () => {
    for (let i = 0; i < 2; i++) {
      const { invoiceId } = await issuedInvoice(w);
      await sendClaim(w, invoiceId);
      assert.equal(await answeredWithin(w, invoiceId, 10_000, () => ''), 'accepted');
    }
  });
});

describe('a worker in another process wakes on NOTIFY (postgres)', {
  skip: !process.env.DATABASE_URL,
}, () => {
  let svc: TestService;
  let w: World;
  let child: ChildProcess | undefined;
  let output = '';
  before(async () => {
    // The API of this process runs no polling worker, so its commits notify other processes.
    svc = await startService('postgres', { env: MINUTE_POLL });
    w = await newWorld(svc);
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const running = child;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      const timer = setTimeout(() => running.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await svc.close();
  });

  test('claims queued through the API are answered by a separate worker polling once a minute', async () => {
    child = spawn(NODE, [BIN, 'worker'], {
      cwd: ROOT,
      env: childEnv({
        DATABASE_URL: svc.databaseUrl!,
        ADMIN_TOKEN: 'adm_worker_wake_test',
        LOG_LEVEL: 'warn',
        ...MINUTE_POLL,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child, 'a `practice-billing worker` process');
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    // The first claim may be taken by the worker's first look at the queue when it starts; once it is
    // answered, the worker waits for its next poll, a minute away, unless woken.
    const first = await issuedInvoice(w);
    await sendClaim(w, first.invoiceId);
    assert.equal(await answeredWithin(w, first.invoiceId, 30_000, () => `:\n${output}`), 'accepted');
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let i = 0; i < 2; i++) {
      const { invoiceId } = await issuedInvoice(w);
      await sendClaim(w, invoiceId);
      assert.equal(await answeredWithin(w, invoiceId, 10_000, () => `:\n${output}`), 'accepted');
    }
  });
});
