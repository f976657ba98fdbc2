// `practice-billing worker` processes on one PostgreSQL, killed and doubled. (a) A worker is SIGKILLed
// again and again while it is in the middle of claims (the sandbox insurer takes 400 ms to answer),
// then a fresh worker finishes: every claim reaches a final answer, recorded once, from the one answer
// the insurer gave its submission id, and no job is left behind. (b) Two workers share a batch: no job
// is taken twice, every submission id is answered once and every claim has one final answer with its
// two claim.status_changed events. Needs DATABASE_URL (the embedded database has one process only).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { billVisit, newPatient, newWorld, type World } from './claims-fixtures.ts';
import { startService, type TestService } from './harness.ts';
import { BIN, childEnv, NODE, ROOT, trackChild } from './processes.ts';
import { sleep } from './webhooks-fixtures.ts';

const FINAL = ['accepted', 'partially_accepted', 'rejected'];

interface WorkerProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

describe('claims across killed and concurrent worker processes (postgres)', {
  skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL: worker processes share one PostgreSQL',
}, () => {
  let svc: TestService;
  const workers: WorkerProcess[] = [];

  before(async () => {
    svc = await startService('postgres');
  });
  after(async () => {
    for (const w of workers) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await svc.close();
  });

  function startWorker(env: Record<string, string>): WorkerProcess {
    const child = spawn(NODE, [BIN, 'worker'], {
      cwd: ROOT,
      env: childEnv({
        DATABASE_URL: svc.databaseUrl!,
        ADMIN_TOKEN: 'adm_worker_kill_test_0123456789abcdef',
        REMITTANCE_DELAY_MS: '0',
        JOB_POLL_MS: '50',
        LOG_LEVEL: 'warn',
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child, 'a `practice-billing worker` process');
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const worker = { child, exited, output: () => output };
    workers.push(worker);
    return worker;
  }

  async function stopWorker(w: WorkerProcess): Promise<void> {
    w.child.kill('SIGTERM');
    const timer = setTimeout(() => w.child.kill('SIGKILL'), 10_000);
    try {
      assert.equal(await w.exited, 0, `the worker stopped cleanly:\n${w.output()}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Bills `count` visits with submitClaim through the API (six at a time); answers the invoice ids. */
  async function queueClaims(world: World, count: number): Promise<string[]> {
    const ids: string[] = [];
    while (ids.length < count) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(6, count - ids.length) }, async () => {
          const { patientId } = await newPatient(world);
          const billed = await billVisit(world, patientId, undefined, { issue: true, submitClaim: true });
          assert.equal(billed.body.claimQueued, true, billed.text);
          return billed.body.invoice.id as string;
        }),
      );
      ids.push(...batch);
    }
    return ids;
  }

  const db = () => svc.db.kysely;

  async function lockers(): Promise<Set<string>> {
    const rows = await sql<{ locked_by: string }>`
        SELECT DISTINCT locked_by FROM jobs WHERE locked_by IS NOT NULL`.execute(db());
    return new Set(rows.rows.map((r) => r.locked_by));
  }

  async function waitUntil(what: string, ms: number, done: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await done())) {
      assert.ok(Date.now() < deadline, `${what} within ${ms / 1000} s`);
      await sleep(100);
    }
  }

  const unfinishedJobs = async (practiceId: string) =>
    (
      await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM jobs WHERE practice_id = ${practiceId} AND state <> 'done'`.execute(
        db(),
      )
    ).rows[0]!.n;

  /**
   * Each claim has a final status, the insurer's one answer to its submission id, its two
   * claim.status_changed events, two items and (unless rejected) one remittance; no submission the
   * claims do not know reached the insurer; no job is unfinished.
   */
  async function assertEachClaimAnsweredOnce(practiceId: string, invoiceIds: string[]): Promise<void> {
    const claims = await sql<{
      invoice_id: string;
      status: string;
      claim_status: string | null;
      authorization_reference: string | null;
      insurer_kind: string | null;
      insurer_status: string | null;
      insurer_reference: string | null;
      events: number;
      items: number;
      insurer_payments: number;
    }>`
        SELECT c.invoice_id, c.status, i.claim_status, c.authorization_reference,
          m.kind AS insurer_kind, m.answer->>'status' AS insurer_status,
          m.answer->>'authorizationReference' AS insurer_reference,
          (SELECT count(*) FROM events e WHERE e.practice_id = c.practice_id AND e.object_id = c.invoice_id
             AND e.type = 'claim.status_changed')::int AS events,
          (SELECT count(*) FROM claim_items ci WHERE ci.practice_id = c.practice_id AND ci.claim_id = c.id)::int AS items,
          (SELECT count(*) FROM payments p WHERE p.practice_id = c.practice_id AND p.invoice_id = c.invoice_id
             AND p.source = 'insurer')::int AS insurer_payments
        FROM claims c
        JOIN invoices i ON i.practice_id = c.practice_id AND i.id = c.invoice_id
        LEFT JOIN sandbox_insurer_messages m ON m.message_id = c.submission_id
        WHERE c.practice_id = ${practiceId}`.execute(db());
    assert.deepEqual(
      claims.rows.map((c) => c.invoice_id).sort(),
      [...invoiceIds].sort(),
      'one claim per invoice',
    );
    for (const c of claims.rows) {
      const what = `claim of ${c.invoice_id}`;
      assert.ok(FINAL.includes(c.status), `${what} is final (${c.status})`);
      assert.equal(c.claim_status, c.status, `${what}: the invoice mirrors it`);
      assert.equal(c.insurer_kind, 'submit', `${what}: the insurer answered its submission id`);
      assert.equal(c.status, c.insurer_status, `${what}: recorded as the insurer answered`);
      assert.equal(c.authorization_reference, c.insurer_reference, `${what}: with its reference`);
      assert.equal(c.events, 2, `${what}: claim.status_changed for submitting and for the answer`);
      assert.equal(c.items, 2, `${what}: one item per line`);
      assert.equal(c.insurer_payments, c.status === 'rejected' ? 0 : 1, `${what}: paid once`);
    }
    const orphans = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sandbox_insurer_messages m
        WHERE m.kind = 'submit' AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.submission_id = m.message_id)`.execute(
      db(),
    );
    assert.equal(orphans.rows[0]!.n, 0, 'no submission the claims do not know reached the insurer');
    assert.equal(await unfinishedJobs(practiceId), 0, 'no job is left unfinished');
  }

  test('a worker SIGKILLed again and again mid-claim: a fresh one finishes, nothing twice', {
    timeout: 180_000,
  }, async (t) => {
    const world = await newWorld(svc);
    const invoiceIds = await queueClaims(world, 36);
    const env = { INSURER_DELAY_MS: '400', JOB_CONCURRENCY: '4', JOB_LEASE_SECONDS: '5' };

    const KILLS = 6;
    for (let k = 0; k < KILLS; k++) {
      const seen = await lockers();
      const w = startWorker(env);
      // Once this worker has taken claims, kill it 300–500 ms later: mid insurer call or recording.
      await waitUntil('the worker takes jobs', 30_000, async () => {
        assert.equal(w.child.exitCode, null, `the worker exited early:\n${w.output()}`);
        return [...(await lockers())].some((id) => !seen.has(id));
      });
      await sleep(300 + Math.floor(Math.random() * 200));
      w.child.kill('SIGKILL');
      await w.exited;
      assert.equal(w.child.signalCode, 'SIGKILL');
    }
    const interrupted = await sql<{ waiting: number }>`
        SELECT count(*) FILTER (WHERE state = 'queued')::int AS waiting
        FROM jobs WHERE practice_id = ${world.practiceId} AND kind = 'claim.submit'`.execute(db());
    assert.ok(
      interrupted.rows[0]!.waiting > 0,
      'claims were still waiting when the last worker was killed (the test stops too late otherwise)',
    );

    const fresh = startWorker(env);
    await waitUntil('a fresh worker finishes every claim and remittance', 60_000, async () => {
      assert.equal(fresh.child.exitCode, null, `the worker exited early:\n${fresh.output()}`);
      return (await unfinishedJobs(world.practiceId)) === 0;
    });
    await stopWorker(fresh);

    await assertEachClaimAnsweredOnce(world.practiceId, invoiceIds);
    const retaken = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM jobs
        WHERE practice_id = ${world.practiceId} AND kind = 'claim.submit' AND attempts > 1`.execute(db());
    assert.ok(
      retaken.rows[0]!.n >= 1,
      `the kills left claims mid-work that a later worker took again (${retaken.rows[0]!.n})`,
    );
    t.diagnostic(
      `${KILLS} kills; ${interrupted.rows[0]!.waiting} claims waiting after the last; ${retaken.rows[0]!.n} taken again`,
    );
  });

  test('two workers share a batch of claims: each job taken once, each claim answered once', {
    timeout: 180_000,
  }, async (t) => {
    const world = await newWorld(svc);
    const env = { INSURER_DELAY_MS: '300', JOB_CONCURRENCY: '4', JOB_LEASE_SECONDS: '60' };
    const before = await lockers();
    const pair = [startWorker(env), startWorker(env)];
    // Claims arrive while both workers poll, as they would from a busy practice.
    const invoiceIds = await queueClaims(world, 54);
    await waitUntil('the workers finish every claim and remittance', 90_000, async () => {
      for (const w of pair) assert.equal(w.child.exitCode, null, `a worker exited early:\n${w.output()}`);
      return (await unfinishedJobs(world.practiceId)) === 0;
    });
    await Promise.all(pair.map(stopWorker));

    await assertEachClaimAnsweredOnce(world.practiceId, invoiceIds);
    const jobs = await sql<{ kind: string; attempts: number; locked_by: string | null }>`
        SELECT kind, attempts, locked_by FROM jobs WHERE practice_id = ${world.practiceId}`.execute(db());
    for (const job of jobs.rows) assert.equal(job.attempts, 1, `a ${job.kind} job was taken once`);
    const byWorker = new Map<string, number>();
    for (const job of jobs.rows) {
      assert.ok(job.locked_by && !before.has(job.locked_by), 'run by one of the two workers');
      byWorker.set(job.locked_by, (byWorker.get(job.locked_by) ?? 0) + 1);
    }
    assert.equal(byWorker.size, 2, `both workers took part: ${JSON.stringify([...byWorker])}`);
    t.diagnostic(`jobs per worker: ${[...byWorker.values()].join(' and ')}`);
  });
});
