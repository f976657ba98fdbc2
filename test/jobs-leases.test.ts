// Job leases hold across machines whose clocks disagree: a job's lease and due time are read on the
// database's clock, so a worker whose own clock runs ten minutes ahead neither takes a job another
// worker is running nor runs a job before it is due; a worker renews the lease of a job while it runs,
// so a job that outlives its lease (an insurer taking longer than the lease) is not taken again; and a
// worker that lost its lease (its renewals stopped, another worker took the job) records nothing of
// what it did; a renewal extends only the lease of the take it names.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type RawBuilder, sql } from 'kysely';
import pino from 'pino';
import type { ClaimSubmission, Insurer, SubmitAnswer } from '../src/insurer/port.ts';
import { jobHandlers, startJobWorker } from '../src/job-catalogue.ts';
import { failJob, jobKey, renewLeases, takeDueJobs } from '../src/jobs/queue.ts';
import type { Worker } from '../src/jobs/worker.ts';
import type { Clock } from '../src/platform/clock.ts';
import { newId } from '../src/platform/ids.ts';
import {
  assertStatusEvents,
  issuedInvoice,
  jobsOfClaim,
  newWorld,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, noteRunning, startService, TestClock, type TestService } from './harness.ts';

const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An insurer that counts its submissions and holds each one until opened, then answers as `answer`. */
class HeldInsurer implements Insurer {
  readonly paysRemittances = true;
  submissions = 0;
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => {
    this.open = resolve;
  });
  private entered!: () => void;
  /** Settles once a submission is being held. */
  readonly called = new Promise<void>((resolve) => {
    this.entered = resolve;
  });
  private readonly answer: (submission: ClaimSubmission) => Promise<SubmitAnswer>;
  constructor(answer: (submission: ClaimSubmission) => Promise<SubmitAnswer>) {
    this.answer = answer;
  }
  async submit(submission: ClaimSubmission): Promise<SubmitAnswer> {
    this.submissions += 1;
    this.entered();
    await this.opened;
    return this.answer(submission);
  }
  reverse(): Promise<never> {
    throw new Error('not in this test');
  }
  release(): void {
    this.open();
  }
}

describeEachBackend('job leases', (backend) => {
  let svc: TestService;
  let w: World;
  const workers: Worker[] = [];
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await svc.close();
  });

  /** Another worker on the service's database, as another machine would run it. */
  function worker(options: { clock?: Clock; insurer?: Insurer; leaseSeconds?: number } = {}): Worker {
    const config = { ...svc.deps.config };
    if (options.leaseSeconds !== undefined) config.jobLeaseSeconds = options.leaseSeconds;
    const started = startJobWorker(
      {
        db: svc.db,
        clock: options.clock ?? svc.clock,
        config,
        insurer: options.insurer ?? svc.deps.insurer,
        secrets: svc.deps.secrets,
        log: silent,
        random: () => 0.5,
      },
      { poll: false, tasks: [] },
    );
    const stopped = noteRunning('a second in-process job worker');
    const tracked: Worker = {
      drain: () => started.drain(),
      takeOnce: () => started.takeOnce(),
      stop: async () => {
        await started.stop();
        stopped();
      },
    };
    workers.push(tracked);
    return tracked;
  }

  const sandbox = () => new HeldInsurer((submission) => svc.deps.insurer.submit(submission));

  async function submitJob(claimId: string) {
    const jobs = (await jobsOfClaim(svc, claimId)).filter((j) => j.kind === 'claim.submit');
    assert.equal(jobs.length, 1);
    return jobs[0]!;
  }

  /** Lets the held insurer answer, and checks the claim was taken, sent and answered once. */
  async function answeredOnceBy(
    held: HeldInsurer,
    running: Promise<number>,
    invoiceId: string,
    claimId: string,
  ) {
    held.release();
    await running;
    assert.equal((await readClaim(w, invoiceId)).status, 'accepted');
    const job = await submitJob(claimId);
    assert.equal(job.state, 'done');
    assert.equal(job.attempts, 1, 'taken once');
    assert.equal(held.submissions, 1, 'the insurer was called once');
    await assertStatusEvents(svc, invoiceId, 2);
  }

  /** Queues a remittance job for a claim that does not exist (it ends at once, doing nothing). */
  async function queueRemittanceOfNoClaim(runAt: RawBuilder<Date>): Promise<string> {
    const id = newId('job');
    await svc.db.kysely
      .insertInto('jobs')
      .values({
        practice_id: w.practiceId,
        id,
        kind: 'insurer.remittance',
        payload: JSON.stringify({ claimId: newId('claim'), submissionId: newId('submission') }),
        run_at: runAt,
        created_at: svc.clock.now(),
        locked_by: null,
        locked_until: null,
        last_error: null,
        finished_at: null,
      })
      .execute();
    return id;
  }

  test('a worker whose clock runs ten minutes ahead never takes a job another worker is running', async () => {
    await svc.worker.drain();
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    const held = sandbox();
    const running = worker({ insurer: held }).drain();
    await held.called;

    const ahead = new TestClock();
    ahead.advance(10 * 60_000);
    const elsewhere = sandbox();
    elsewhere.release();
    assert.equal(
      await worker({ clock: ahead, insurer: elsewhere }).drain(),
      0,
      'the leased job is not taken',
    );
    assert.equal(elsewhere.submissions, 0);
    assert.equal((await readClaim(w, invoiceId)).status, 'submitting');

    await answeredOnceBy(held, running, invoiceId, sent.id);
  });

  test('a worker whose clock runs ahead does not run a job before it is due', async () => {
    await svc.worker.drain();
    const id = await queueRemittanceOfNoClaim(sql<Date>`now() + interval '5 minutes'`);
    const ahead = new TestClock();
    ahead.advance(10 * 60_000);
    assert.equal(await worker({ clock: ahead }).drain(), 0, 'due in five minutes on the database clock');
    const row = await svc.db.kysely
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.state, 'queued');
    assert.equal(row.attempts, 0);
    await svc.db.kysely.deleteFrom('jobs').where('id', '=', id).execute();
  });

  test('a job that runs longer than its lease is renewed, not taken again', async () => {
    await svc.worker.drain();
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    const held = sandbox();
    const running = worker({ insurer: held, leaseSeconds: 2 }).drain();
    await held.called;

    const other = sandbox();
    other.release();
    const second = worker({ insurer: other, leaseSeconds: 2 });
    let taken = 0;
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      taken += await second.drain();
      await sleep(100);
    }
    assert.equal(taken, 0, 'two and a half leases long, the job was never free');
    assert.equal(other.submissions, 0);

    await answeredOnceBy(held, running, invoiceId, sent.id);
  });

  test('a worker that lost its lease records nothing of its work', async () => {
    await svc.worker.drain();
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    const queued = await submitJob(sent.id);
    // A worker takes the job with a one-second lease and is then paused: it renews nothing.
    const taken = await svc.db.kysely
      .updateTable('jobs')
      .set({
        locked_by: 'wrk_paused',
        locked_until: sql<Date>`now() + interval '1 second'`,
        attempts: sql<number>`attempts + 1`,
      })
      .where('id', '=', queued.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const pausedInsurer = new HeldInsurer(async () => ({
      status: 'rejected',
      message: 'the answer the paused worker got',
      authorizationReference: null,
      lines: [],
    }));
    const handlers = jobHandlers({
      db: svc.db,
      clock: svc.clock,
      config: svc.deps.config,
      insurer: pausedInsurer,
      log: silent,
    });
    const paused = handlers['claim.submit']!(taken).then(
      () => undefined,
      (error: unknown) => error,
    );
    await pausedInsurer.called;
    await sleep(1_200);

    // Its lease ran out: another worker takes the job and asks the insurer again.
    const held = sandbox();
    const running = worker({ insurer: held }).drain();
    await held.called;

    // The paused worker wakes with its answer while the job is the other worker's.
    pausedInsurer.release();
    const outcome = await paused;
    assert.equal((await readClaim(w, invoiceId)).status, 'submitting', 'the paused worker recorded nothing');
    assert.ok(outcome instanceof Error, 'the paused worker learns that it lost the lease');
    assert.match(outcome.message, /lease/);

    held.release();
    await running;
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted', "the lease holder's answer is recorded");
    const job = await submitJob(sent.id);
    assert.equal(job.state, 'done');
    assert.equal(job.attempts, 2);
    assert.notEqual(job.locked_by, 'wrk_paused');
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a renewal extends only leases this very take still holds', async () => {
    await svc.worker.drain();
    const id = await queueRemittanceOfNoClaim(sql<Date>`now()`);
    const row = () =>
      svc.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const [first] = await takeDueJobs(svc.db, 'wrk_first', 1, 60_000);
    assert.equal(first?.id, id);
    const renewed = await renewLeases(svc.db, 'wrk_first', [first], 120_000);
    assert.deepEqual([...renewed], [jobKey(first)]);
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(svc.db.kysely);
    const until = (await row()).locked_until!.getTime() - rows[0]!.now.getTime();
    assert.ok(until > 100_000 && until <= 120_000, `renewed to ${until} ms from now`);

    // Its lease runs out (the worker stopped renewing) and another worker takes the job.
    await svc.db.kysely
      .updateTable('jobs')
      .set({ locked_until: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
    const [second] = await takeDueJobs(svc.db, 'wrk_second', 1, 60_000);
    assert.equal(second?.id, id);
    const taken = await row();
    assert.equal((await renewLeases(svc.db, 'wrk_first', [first], 600_000)).size, 0, 'not renewed: lost');
    assert.deepEqual(await row(), taken, "the other worker's lease is untouched");
    // Nor does the same worker renew an older take of a job it took again.
    assert.equal((await renewLeases(svc.db, 'wrk_second', [first], 600_000)).size, 0);
    await failJob(svc.db, first, svc.clock.now(), 'too late');
    assert.deepEqual(await row(), taken, 'nor can the first worker fail it');

    assert.equal((await renewLeases(svc.db, 'wrk_second', [second], 60_000)).size, 1);
    await svc.db.kysely.deleteFrom('jobs').where('id', '=', id).execute();
  });
});
