// A worker wakes when a commit queues a job instead of waiting for its next poll: in the process that
// committed (an in-process signal, both databases), and in another process (a NOTIFY sent after the
// commit, PostgreSQL). The poll interval is set to a minute, so an answer within seconds can only
// come from the wake-up.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import type { JobRow } from '../src/jobs/job-row.ts';
import { pollLane } from '../src/jobs/lanes.ts';
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

test('a lane whose job ends while a take is on its way takes again at once, not at its next poll', {
  timeout: 30_000,
}, async () => {
  // Polls a minute apart, so only the job's ending can bring the third take within the test's bound.
  const takes: ((jobs: JobRow[]) => void)[] = [];
  let tookAgain!: () => void;
  const thirdTake = new Promise<void>((resolve) => {
    tookAgain = resolve;
  });
  let endJob!: () => void;
  const jobEnded = new Promise<void>((resolve) => {
    endJob = resolve;
  });
  const lane = pollLane({
    lane: 'webhooks',
    limits: { concurrency: 2, keyCap: 1, practiceCap: null },
    settings: { jobPollMs: 60_000, jobPollMaxMs: 60_000 },
    take: () => {
      if (takes.length === 2) tookAgain();
      // The first take leaves a delivery behind its endpoint's cap: the delivery taken ending may free it.
      const heldBack = takes.length === 0;
      return new Promise<JobRow[]>((resolve) => takes.push(resolve)).then((jobs) => ({ jobs, heldBack }));
    },
    run: () => jobEnded,
    log: { warn() {} } as unknown as FastifyBaseLogger,
  });
  try {
    const until = async (n: number) => {
      while (takes.length < n) await new Promise((resolve) => setImmediate(resolve));
    };
    await until(1);
    takes[0]!([{ id: 'job_1', concurrency_key: 'wh_1' } as JobRow]);
    // One of two slots taken: the lane waits for its poll, or a signal.
    lane.signal();
    await until(2);
    // The job ends while the second take is on its way, which then finds nothing.
    endJob();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(lane.running, 0);
    takes[1]!([]);
    await thirdTake;
  } finally {
    takes.at(-1)?.([]);
    await lane.stop();
  }
});

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
        ADMIN_TOKEN: 'adm_worker_wake_test_0123456789abcdef',
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
