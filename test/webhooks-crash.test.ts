// At-least-once delivery across a worker that dies: a delivery job taken by a worker that never
// finishes it is taken again once its lease (JOB_LEASE_SECONDS, 60 s) runs out, and delivered. When
// the dead worker had already sent the request, the receiver sees the event twice under one
// webhook-id, which is what it dedupes on.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { jobHandlers } from '../src/job-catalogue.ts';
import { finishJob, isJobLeaseLost, takeDueJobs } from '../src/jobs/queue.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { DELIVER_JOB } from '../src/webhooks/job-kinds.ts';
import { WebhookSender } from '../src/webhooks/sender.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { addEndpoint, attempts, billVisit, Receiver, sleep } from './webhooks-fixtures.ts';

const LEASE_MS = 60_000;

describeEachBackend('webhook delivery across a dead worker', (backend) => {
  let svc: TestService;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const r = await Receiver.forService(svc);
    receivers.push(r);
    return r;
  };

  before(async () => {
    svc = await startService(backend);
    assert.equal(svc.deps.config.jobLeaseSeconds * 1000, LEASE_MS);
  });
  after(async () => {
    await svc.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test('a delivery job held by a killed worker is delivered once its lease runs out', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const ep = await addEndpoint(svc, practice.practiceId, r);
    await billVisit(svc, practice);

    const taken = await takeDueJobs(svc.db, 'wrk_killed', 100, LEASE_MS);
    const held = taken.filter((j) => j.kind === DELIVER_JOB.name && j.practice_id === practice.practiceId);
    assert.equal(held.length, 1, 'the delivery job was taken by the worker that dies');

    await svc.worker.drain();
    svc.clock.advance(LEASE_MS / 2);
    await svc.worker.drain();
    assert.equal(r.requests.length, 0, 'the lease keeps other workers off while it lasts');

    svc.clock.advance(LEASE_MS / 2 + 1_000);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1, 'delivered once the lease ran out');
    assert.equal(r.uniqueIds().size, 1);
    r.assertAllVerified();
    const log = await attempts(svc, practice.practiceId, ep.id);
    assert.deepEqual(
      log.map((a) => [a.attemptNumber, a.statusCode]),
      [[1, 200]],
    );

    // The dead worker, were it to wake, no longer owns the job: it is told so, and nothing changes.
    const jobRow = () =>
      svc.db.kysely.selectFrom('jobs').selectAll().where('id', '=', held[0]!.id).executeTakeFirstOrThrow();
    const before = await jobRow();
    svc.clock.advance(1_000);
    await assert.rejects(
      asOperator(svc.db, (trx) => finishJob(trx, held[0]!, svc.clock.now())),
      isJobLeaseLost,
    );
    assert.deepEqual(await jobRow(), before);
    svc.clock.advance(LEASE_MS * 2);
    await svc.worker.drain();
    assert.equal(r.requests.length, 1, 'and it is not delivered again');
  });

  test('a worker that sent and died before recording it: the receiver dedupes on webhook-id', async () => {
    const practice = await svc.newPractice();
    const r = await receiver();
    const ep = await addEndpoint(svc, practice.practiceId, r);
    await billVisit(svc, practice);
    await billVisit(svc, practice);

    // A worker whose process dies right after the receiver got the request.
    const real = new WebhookSender(true);
    const dying = {
      send: async (url: string, headers: Record<string, string>, body: string) => {
        await real.send(url, headers, body);
        return new Promise<never>(() => {});
      },
    } as unknown as WebhookSender;
    const handlers = jobHandlers(
      {
        db: svc.db,
        clock: svc.clock,
        config: svc.deps.config,
        insurer: svc.deps.insurer,
        secrets: svc.deps.secrets,
        log: pino({ level: 'silent' }),
        random: () => 0.5,
      },
      dying,
    );
    try {
      const taken = await takeDueJobs(svc.db, 'wrk_dying', 100, LEASE_MS);
      const jobs = taken.filter((j) => j.kind === DELIVER_JOB.name && j.practice_id === practice.practiceId);
      assert.equal(jobs.length, 2);
      for (const job of jobs) void handlers[DELIVER_JOB.name]!(job);
      const deadline = Date.now() + 5_000;
      while (r.requests.length < 2 && Date.now() < deadline) await sleep(20);
      assert.equal(r.requests.length, 2, 'the dying worker sent both');
      assert.equal((await attempts(svc, practice.practiceId, ep.id)).length, 0, 'and recorded neither');

      await svc.worker.drain();
      assert.equal(r.requests.length, 2, 'still leased');
      svc.clock.advance(LEASE_MS + 1_000);
      await svc.worker.drain();
      assert.equal(r.requests.length, 4, 'each sent again');
      assert.equal(r.uniqueIds().size, 2, 'two events, each received twice under one webhook-id');
      for (const id of r.uniqueIds()) {
        const copies = r.requests.filter((x) => x.webhookId === id);
        assert.equal(copies.length, 2);
        assert.equal(copies[0]!.body, copies[1]!.body);
      }
      r.assertAllVerified();
      const log = await attempts(svc, practice.practiceId, ep.id);
      assert.deepEqual(
        log.map((a) => a.statusCode),
        [200, 200],
      );
    } finally {
      await real.close();
    }
  });
});
