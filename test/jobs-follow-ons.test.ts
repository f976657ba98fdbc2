// Follow-on jobs (src/jobs/follow-on.ts): a job queued due at once by a running job is leased to that
// job's worker by its insert and run there after the commit, without a take; but never past its key's
// cap counted among the jobs running under a lease in every worker, never in a lane that has stopped
// (its lease is given back), and drain() and takeOnce() wait for those a polling lane runs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import { Type } from 'typebox';
import { type JobKind, jobKind } from '../src/jobs/kind.ts';
import { announceQueuedJobs, finishJob, insertJobRows, newJobRow, takeDueJobs } from '../src/jobs/queue.ts';
import { type JobHandler, startWorker, type Worker } from '../src/jobs/worker.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { describeEachBackend, noteRunning, startService, type TestService } from './harness.ts';

const silent = pino({ level: 'silent' });

const PARENT = jobKind('test.follow-on-parent', Type.Object({ key: Type.String() }));
// A child names the job that queued it.
const CHILD = jobKind('test.follow-on-child', Type.Object({ parent: Type.String() }), 'webhooks');
const CLAIMS_CHILD = jobKind('test.follow-on-claims-child', Type.Object({ parent: Type.String() }));
const MARKER = jobKind('test.follow-on-marker', Type.Object({}));

describeEachBackend('follow-on jobs', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  /**
   * A worker of its own on the service's database, one endpoint's deliveries capped at 1, deaf to
   * NOTIFY (its lanes stop as soon as stop() is called) and polling a minute apart when it polls.
   */
  function worker(handlers: Record<string, JobHandler>, poll: boolean): Worker {
    const { listen: _, ...db } = svc.db;
    const started = startWorker(
      {
        db,
        clock: svc.clock,
        log: silent,
        settings: {
          ...svc.deps.config,
          webhookEndpointConcurrency: 1,
          jobConcurrency: 4,
          mailJobConcurrency: 4,
          jobPollMs: 60_000,
          jobPollMaxMs: 60_000,
        },
      },
      { handlers, tasks: [], poll },
    );
    const stopped = noteRunning('a job worker of the follow-on tests');
    return {
      drain: () => started.drain(),
      takeOnce: () => started.takeOnce(),
      stop: async () => {
        await started.stop();
        stopped();
      },
    };
  }

  /** Queues a job for any worker's take (not from inside a job: no follow-on). */
  async function queue(row: ReturnType<typeof newJobRow>): Promise<string> {
    await asOperator(svc.db, (trx) => trx.insertInto('jobs').values(row).execute());
    return row.id;
  }

  /**
   * A parent job's handler: queues a job of `kind` due at once, keyed by the parent's payload (a
   * follow-on, if it may be), then calls `meanwhile` and ends in the same transaction.
   */
  const queueing =
    (kind: JobKind, meanwhile?: () => Promise<void>): JobHandler =>
    async (job) => {
      await asOperator(svc.db, async (trx) => {
        const key = job.payload.key as string;
        const row = newJobRow(job.practice_id, kind, { parent: job.id }, svc.clock.now(), 0, key);
        announceQueuedJobs(trx, kind.lane, [row], await insertJobRows(trx, [row]).execute());
        await meanwhile?.();
        await finishJob(trx, job, svc.clock.now());
      });
    };

  const finishing =
    (ran: string[], meanwhile?: () => Promise<void>): JobHandler =>
    async (job) => {
      ran.push(job.id);
      await meanwhile?.();
      await asOperator(svc.db, (trx) => finishJob(trx, job, svc.clock.now()));
    };

  async function jobRow(id: string) {
    const found = await asOperator(svc.db, (trx) =>
      sql<{ state: string; locked_by: string | null; locked_until: Date | null; attempts: number }>`
        SELECT state, locked_by, locked_until, attempts FROM jobs WHERE id = ${id}`.execute(trx),
    );
    return found.rows[0]!;
  }

  const childIdOf = async (parentId: string) => {
    const found = await asOperator(svc.db, (trx) =>
      sql<{ id: string }>`SELECT id FROM jobs WHERE payload ->> 'parent' = ${parentId}`.execute(trx),
    );
    return found.rows[0]!.id;
  };

  test("a follow-on delivery to an endpoint at its cap under another worker's lease waits for a take, and runs once that one ends", async () => {
    const practice = await svc.newPractice();
    const endpoint = `ep_${practice.practiceId}`;
    const now = svc.clock.now();
    // One delivery of the endpoint runs in another worker (another process).
    await queue(newJobRow(practice.practiceId, CHILD, { parent: 'none' }, now, 0, endpoint));
    const elsewhere = await takeDueJobs(svc.db, 'wrk_elsewhere', 1, 60_000, {
      lanes: ['webhooks'],
      keyCap: 1,
    });
    assert.equal(elsewhere.length, 1);
    const parentId = await queue(newJobRow(practice.practiceId, PARENT, { key: endpoint }, now));
    const ran: string[] = [];
    const w = worker(
      {
        [PARENT.name]: queueing(CHILD),
        [CHILD.name]: finishing(ran),
      },
      false,
    );
    try {
      // The parent ran; its delivery was queued, not leased, and did not run here.
      assert.equal(await w.takeOnce(), 1);
      assert.deepEqual(ran, []);
      const childId = await childIdOf(parentId);
      assert.deepEqual(await jobRow(childId), {
        state: 'queued',
        locked_by: null,
        locked_until: null,
        attempts: 0,
      });
      // The other worker's delivery ends: the queued one is taken and runs.
      await asOperator(svc.db, (trx) => finishJob(trx, elsewhere[0]!, svc.clock.now()));
      assert.equal(await w.drain(), 1);
      assert.deepEqual(ran, [childId]);
      assert.equal((await jobRow(childId)).state, 'done');
    } finally {
      await w.stop();
    }
  });

  test('a follow-on handed over while its lane stops is not run, and its lease is given back', async () => {
    const practice = await svc.newPractice();
    const parentId = await queue(newJobRow(practice.practiceId, PARENT, { key: '' }, svc.clock.now()));
    const ran: string[] = [];
    let stopping: Promise<void> | undefined;
    let parentEnded!: () => void;
    const parentDone = new Promise<void>((resolve) => {
      parentEnded = resolve;
    });
    const w: Worker = worker(
      {
        [PARENT.name]: async (job) => {
          // The follow-on's slot is held; the worker stops before the parent's transaction commits.
          await queueing(CLAIMS_CHILD, async () => {
            stopping = w.stop();
            await new Promise((resolve) => setImmediate(resolve));
          })(job);
          parentEnded();
        },
        [CLAIMS_CHILD.name]: finishing(ran),
      },
      true,
    );
    await parentDone;
    await stopping;
    assert.deepEqual(ran, []);
    const child = await jobRow(await childIdOf(parentId));
    assert.equal(child.state, 'queued');
    assert.equal(child.locked_by, null);
    assert.equal(child.locked_until, null);
    assert.equal((await jobRow(parentId)).state, 'done');
    // Free for any worker's take at once.
    const later = worker({ [CLAIMS_CHILD.name]: finishing(ran) }, false);
    try {
      assert.equal(await later.drain(), 1);
      assert.equal(ran.length, 1);
    } finally {
      await later.stop();
    }
  });

  test('takeOnce() waits for the follow-on jobs a polling lane is running', async () => {
    const practice = await svc.newPractice();
    const parentId = await queue(newJobRow(practice.practiceId, PARENT, { key: '' }, svc.clock.now()));
    let childStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      childStarted = resolve;
    });
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let childEnded = false;
    const ran: string[] = [];
    const w = worker(
      {
        [PARENT.name]: queueing(CLAIMS_CHILD),
        [CLAIMS_CHILD.name]: async (job) => {
          childStarted();
          await finishing(ran, () => gate)(job);
          childEnded = true;
        },
        // The job takeOnce takes opens the gate only as it ends, after its own work.
        [MARKER.name]: async (job) => {
          await asOperator(svc.db, (trx) => finishJob(trx, job, svc.clock.now()));
          openGate();
        },
      },
      true,
    );
    try {
      // The polling claims lane took the parent, and runs its follow-on.
      await started;
      const childId = await childIdOf(parentId);
      assert.equal((await jobRow(childId)).locked_by !== null, true);
      await queue(newJobRow(practice.practiceId, MARKER, {}, svc.clock.now()));
      assert.equal(await w.takeOnce(), 1);
      assert.equal(childEnded, true);
      assert.deepEqual(ran, [childId]);
    } finally {
      openGate();
      await w.stop();
    }
  });
});
