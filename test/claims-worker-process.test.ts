// `practice-billing worker` as its own process on PostgreSQL: the API (in this process, its worker
// idle) queues a claim, and a separately started worker process sharing the database answers it and
// pays the remittance. Needs DATABASE_URL.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { issuedInvoice, newWorld, payments, sendClaim, type World } from './claims-fixtures.ts';
import { startService, type TestService } from './harness.ts';
import { BIN, childEnv, NODE, ROOT, trackChild } from './processes.ts';

describe('practice-billing worker process (postgres)', { skip: !process.env.DATABASE_URL }, () => {
  let svc: TestService;
  let w: World;
  let child: ChildProcess | undefined;
  let output = '';
  let exited: Promise<number | null> | undefined;

  before(async () => {
    svc = await startService('postgres');
    w = await newWorld(svc);
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await svc.close();
  });

  test('a claim sent through the API is answered by a separate `practice-billing worker`', async () => {
    assert.ok(svc.databaseUrl);
    const { invoiceId, invoice } = await issuedInvoice(w);
    await sendClaim(w, invoiceId);
    const waiting = await w.api('GET', `/invoices/${invoiceId}/claim`);
    assert.equal(waiting.body.status, 'submitting', 'the API process does not answer claims itself');

    child = spawn(NODE, [BIN, 'worker'], {
      cwd: ROOT,
      env: childEnv({
        DATABASE_URL: svc.databaseUrl,
        INSURER_DELAY_MS: '0',
        REMITTANCE_DELAY_MS: '0',
        ADMIN_TOKEN: 'adm_worker_process_test_0123456789abcdef',
        LOG_LEVEL: 'warn',
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
    const running = child;
    exited = new Promise((resolve) => running.once('exit', (code) => resolve(code)));

    let claim: { status: string; items: unknown[] } | undefined;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      assert.equal(child.exitCode, null, `the worker exited early:\n${output}`);
      const read = await w.api('GET', `/invoices/${invoiceId}/claim`);
      assert.equal(read.status, 200, read.text);
      if (read.body.status !== 'submitting') {
        claim = read.body;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(claim, `the worker did not answer the claim within 20 s:\n${output}`);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.items.length, 2);
    const current = await w.api('GET', `/invoices/${invoiceId}`);
    assert.equal(current.body.claimStatus, 'accepted');

    // The same worker pays the remittance.
    let paid: Array<{ source: string; amount: number }> = [];
    const paidBy = Date.now() + 20_000;
    while (Date.now() < paidBy && paid.length === 0) {
      paid = await payments(w, invoiceId);
      if (paid.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(
      paid.map((p) => [p.source, p.amount]),
      [['insurer', invoice.totalGross]],
    );
  });
});
