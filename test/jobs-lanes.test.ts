// Isolation in the job queue: claim work runs in a lane of its own, so a practice whose webhook
// receivers are slow, with a backlog of deliveries, never holds up another practice's claim; within a
// lane, a take deals its slots round-robin by practice, so a deep backlog does not take every slot;
// and deliveries to one endpoint are capped at WEBHOOK_ENDPOINT_CONCURRENCY running at once, counted
// from the leases in the database (so across worker processes), so a slow endpoint's deliveries never
// occupy the slots of a healthy endpoint of the same practice.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { type RawBuilder, sql } from 'kysely';
import { Type } from 'typebox';
import type { JobRow } from '../src/jobs/job-row.ts';
import { jobKind } from '../src/jobs/kind.ts';
import { batchedTakes, newJobRow, retryJob, takeDueJobs } from '../src/jobs/queue.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { queueDeliveries } from '../src/webhooks/outbox.ts';
import { DELIVERY_TIMEOUT_MS } from '../src/webhooks/sender.ts';
import { apiClient, describeEachBackend, startService, type TestService } from './harness.ts';
import { addEndpoint, billVisit, Receiver } from './webhooks-fixtures.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until check answers true (a generous bound against hanging, never a judgement of speed). */
async function eventually(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`never happened: ${what}`);
    await sleep(25);
  }
}

/** A receiver that never answers (the sender gives up after 10 s), counting requests open at once. */
class StalledReceiver {
  open = 0;
  mostOpen = 0;
  received = 0;
  /** Requests that ended: the sender gave up (10 s) or the receiver closed. */
  ended = 0;
  readonly #server = http.createServer((req, res) => {
    this.received += 1;
    this.open += 1;
    this.mostOpen = Math.max(this.mostOpen, this.open);
    res.on('close', () => {
      this.open -= 1;
      this.ended += 1;
    });
    req.resume();
  });
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }
  url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hook`;
  }
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Runs a statement as the operator (the service's own reads and writes across practices). */
async function asService<R>(svc: TestService, query: RawBuilder<R>): Promise<R[]> {
  return (await asOperator(svc.db, (trx) => query.execute(trx))).rows;
}

const TEST_JOB = jobKind('test.lane-work', Type.Object({ n: Type.Number() }));
const TEST_HOOK = jobKind('test.lane-hook', Type.Object({ n: Type.Number() }), 'webhooks');

describeEachBackend('job lanes, fairness and per-endpoint caps', (backend) => {
  // A service whose worker polls, as in production, and one whose queue the tests take from by hand.
  let svc: TestService;
  let quiet: TestService;
  before(async () => {
    svc = await startService(backend, {
      workerPolls: true,
      env: { WEBHOOK_ENDPOINT_CONCURRENCY: '2', WEBHOOK_JOB_CONCURRENCY: '4', JOB_CONCURRENCY: '4' },
    });
    quiet = await startService(backend);
  });
  after(async () => {
    await Promise.all([svc.close(), quiet.close()]);
  });

  test("a webhooks lane whose every slot is held by stalled deliveries leaves another practice's claim free", async () => {
    // Two stalled endpoints at the cap of 2 each hold all 4 slots of the webhooks lane, with a backlog
    // behind them; were deliveries and claims to share slots, the claim would wait for a delivery to
    // give up (10 s), so it must reach its outcome while none of the stalled requests has ended.
    const stalled = [await new StalledReceiver().start(), await new StalledReceiver().start()];
    const open = () => stalled.reduce((sum, receiver) => sum + receiver.open, 0);
    const ended = () => stalled.reduce((sum, receiver) => sum + receiver.ended, 0);
    try {
      const a = await svc.newPractice();
      const endpointIds: string[] = [];
      for (const receiver of stalled) {
        const endpoint = await svc.admin('POST', `/practices/${a.practiceId}/webhook-endpoints`, {
          url: receiver.url(),
        });
        assert.equal(endpoint.status, 201, endpoint.text);
        endpointIds.push(endpoint.body.id as string);
      }
      await billVisit(svc, a);
      await asOperator(svc.db, async (trx) => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM events WHERE practice_id = ${a.practiceId} ORDER BY id LIMIT 1`.execute(trx);
        const wanted = endpointIds.flatMap((endpointId) =>
          Array.from({ length: 10 }, () => ({ endpointId, eventId: rows[0]!.id })),
        );
        await queueDeliveries(trx, a.practiceId, wanted, svc.clock.now());
      });
      await eventually('the stalled endpoints hold every slot of the webhooks lane', () => open() === 4);

      const b = await svc.newPractice();
      const visit = await billVisit(svc, b, { claim: true });
      const api = apiClient(svc, b.key);
      let outcome = '';
      await eventually("the other practice's claim reaches its outcome", async () => {
        const claim = await api('GET', `/invoices/${visit.invoiceId}/claim`);
        outcome = claim.body.outcome;
        return outcome !== 'queued';
      });
      const [openAtOutcome, endedAtOutcome] = [open(), ended()];
      assert.equal(outcome, 'complete');
      assert.equal(openAtOutcome, 4, 'the whole webhooks lane was still held by the stalled deliveries');
      assert.equal(endedAtOutcome, 0, 'the claim needed no delivery to give up its slot');
    } finally {
      await Promise.all(stalled.map((receiver) => receiver.close()));
      await asService(svc, sql`UPDATE webhook_deliveries SET state = 'cancelled' WHERE state = 'pending'`);
      await asService(svc, sql`UPDATE jobs SET state = 'done' WHERE state = 'queued'`);
    }
  });

  test("a practice's slow endpoint and its backlog of deliveries hold up neither another practice's claim nor a healthy endpoint", async () => {
    const stalled = await new StalledReceiver().start();
    const healthy = await Receiver.forService(svc);
    try {
      const a = await svc.newPractice();
      const slowEndpoint = await svc.admin('POST', `/practices/${a.practiceId}/webhook-endpoints`, {
        url: stalled.url(),
      });
      assert.equal(slowEndpoint.status, 201, slowEndpoint.text);
      const fastEndpoint = await addEndpoint(svc, a.practiceId, healthy);
      // One visit's events go to both endpoints; then a backlog of 30 more deliveries to the slow one,
      // queued before anything of the other practice.
      const startedAt = Date.now();
      await billVisit(svc, a);
      await asOperator(svc.db, async (trx) => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM events WHERE practice_id = ${a.practiceId} ORDER BY id LIMIT 1`.execute(trx);
        const wanted = Array.from({ length: 30 }, () => ({
          endpointId: slowEndpoint.body.id as string,
          eventId: rows[0]!.id,
        }));
        await queueDeliveries(trx, a.practiceId, wanted, svc.clock.now());
      });
      await eventually('the slow endpoint holds its two slots', () => stalled.open === 2);

      const b = await svc.newPractice();
      const visit = await billVisit(svc, b, { claim: true });
      const api = apiClient(svc, b.key);
      let outcome = '';
      await eventually("the other practice's claim reaches its outcome", async () => {
        const claim = await api('GET', `/invoices/${visit.invoiceId}/claim`);
        outcome = claim.body.outcome;
        return outcome !== 'queued';
      });
      assert.equal(outcome, 'complete');

      // The healthy endpoint of the slow one's practice got every delivery meanwhile.
      await eventually('the healthy endpoint gets its deliveries', async () => {
        const rows = await asService(
          svc,
          sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_deliveries
           WHERE practice_id = ${a.practiceId} AND endpoint_id = ${fastEndpoint.id} AND state <> 'delivered'`,
        );
        return rows[0]!.n === 0 && healthy.requests.length > 0;
      });
      // ... while the slow endpoint's deliveries are all still pending (it never answers, so an attempt
      // only ends when the sender gives up, and goes to its retry), and it has been sent no more than
      // its cap of 2 at a time allows: each of its slots holds a request for DELIVERY_TIMEOUT_MS, so
      // within the time elapsed a slot started at most one request per DELIVERY_TIMEOUT_MS, plus one.
      const elapsedMs = Date.now() - startedAt;
      const slow = await asService(
        svc,
        sql<{ total: number; pending: number }>`
        SELECT count(*)::int AS total, count(*) FILTER (WHERE state = 'pending')::int AS pending
          FROM webhook_deliveries
         WHERE practice_id = ${a.practiceId} AND endpoint_id = ${slowEndpoint.body.id}`,
      );
      assert.ok(slow[0]!.total > 30);
      assert.equal(slow[0]!.pending, slow[0]!.total, 'every slow delivery is still pending');
      const mostRequests = 2 * (Math.floor(elapsedMs / DELIVERY_TIMEOUT_MS) + 1);
      assert.ok(
        stalled.received <= mostRequests,
        `${stalled.received} requests reached the slow endpoint in ${elapsedMs} ms; its cap allows ${mostRequests}`,
      );
      assert.equal(stalled.mostOpen, 2, 'never more than the cap of deliveries at the slow endpoint at once');
    } finally {
      // The slow endpoint goes away, so the deliveries still running end at once.
      await stalled.close();
      await healthy.close();
      await asService(svc, sql`UPDATE webhook_deliveries SET state = 'cancelled' WHERE state = 'pending'`);
      await asService(svc, sql`UPDATE jobs SET state = 'done' WHERE state = 'queued'`);
    }
  });

  test("one practice's stalled receivers hold no more than its own cap of the webhooks lane: another practice's delivery goes out while they stay stalled", async (t) => {
    // Two stalled endpoints of one practice, 2 deliveries each at most, would hold all 4 slots of the
    // lane; the practice's cap of 2 leaves 2 for others. The other practice's delivery must arrive
    // while the stalled requests are all still open and none has given up (which takes 10 s).
    const capped = await startService(backend, {
      workerPolls: true,
      env: {
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        WEBHOOK_JOB_CONCURRENCY: '4',
        WEBHOOK_PRACTICE_CONCURRENCY: '2',
      },
    });
    const stalled = [await new StalledReceiver().start(), await new StalledReceiver().start()];
    const healthy = await Receiver.forService(capped);
    const open = () => stalled.reduce((sum, receiver) => sum + receiver.open, 0);
    const ended = () => stalled.reduce((sum, receiver) => sum + receiver.ended, 0);
    try {
      const a = await capped.newPractice();
      const endpointIds: string[] = [];
      for (const receiver of stalled) {
        const endpoint = await capped.admin('POST', `/practices/${a.practiceId}/webhook-endpoints`, {
          url: receiver.url(),
        });
        assert.equal(endpoint.status, 201, endpoint.text);
        endpointIds.push(endpoint.body.id as string);
      }
      await billVisit(capped, a);
      await asOperator(capped.db, async (trx) => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM events WHERE practice_id = ${a.practiceId} ORDER BY id LIMIT 1`.execute(trx);
        const wanted = endpointIds.flatMap((endpointId) =>
          Array.from({ length: 10 }, () => ({ endpointId, eventId: rows[0]!.id })),
        );
        await queueDeliveries(trx, a.practiceId, wanted, capped.clock.now());
      });
      await eventually("the stalled practice holds its cap's slots", () => open() === 2);

      const b = await capped.newPractice();
      await addEndpoint(capped, b.practiceId, healthy);
      const queuedAt = performance.now();
      await billVisit(capped, b);
      await eventually("the other practice's delivery arrives", () => healthy.requests.length > 0);
      const lateMs = performance.now() - queuedAt;
      const [openAtArrival, endedAtArrival, mostOpen] = [
        open(),
        ended(),
        Math.max(...stalled.map((r) => r.mostOpen)),
      ];
      assert.equal(endedAtArrival, 0, 'no stalled delivery had to give up its slot first');
      assert.equal(openAtArrival, 2, 'the stalled practice still held its two slots');
      assert.ok(mostOpen <= 2, 'never more than its cap of the stalled practice at once');
      // A measured figure for the record, not a bound: how long the other practice's webhook took.
      t.diagnostic(`the other practice's delivery arrived ${Math.round(lateMs)} ms after its bill was sent`);
    } finally {
      await Promise.all(stalled.map((receiver) => receiver.close()));
      await healthy.close();
      await capped.close();
    }
  });

  test("a take deals its slots round-robin by practice: a deep backlog leaves room for another practice's job", async () => {
    const deep = await quiet.newPractice();
    const other = await quiet.newPractice();
    const now = quiet.clock.now();
    await asOperator(quiet.db, async (trx) => {
      await trx
        .insertInto('jobs')
        .values(Array.from({ length: 40 }, (_, n) => newJobRow(deep.practiceId, TEST_JOB, { n }, now)))
        .execute();
      // The deep backlog's jobs fell due one after the other, each before the other practice's.
      await sql`UPDATE jobs SET run_at = now() - make_interval(secs => 100 - (payload ->> 'n')::int)
                 WHERE practice_id = ${deep.practiceId}`.execute(trx);
      await trx
        .insertInto('jobs')
        .values(newJobRow(other.practiceId, TEST_JOB, { n: 0 }, now))
        .execute();
    });
    const first = await takeDueJobs(quiet.db, 'wrk_fair_1', 4, 60_000, { lanes: ['claims'] });
    assert.equal(first.length, 4);
    assert.equal(
      first.filter((job) => job.practice_id === other.practiceId).length,
      1,
      "the other practice's one job is taken, though 40 older ones of the deep backlog wait",
    );
    assert.deepEqual(
      first
        .filter((job) => job.practice_id === deep.practiceId)
        .map((job) => job.payload.n as number)
        .sort((x, y) => x - y),
      [0, 1, 2],
      'within a practice the oldest go first',
    );
    const second = await takeDueJobs(quiet.db, 'wrk_fair_2', 4, 60_000, { lanes: ['claims'] });
    assert.deepEqual(
      second
        .map((job): [string, number] => [job.practice_id, job.payload.n as number])
        .sort((x, y) => x[1] - y[1]),
      [3, 4, 5, 6].map((n) => [deep.practiceId, n]),
    );
    // The webhooks lane has none of these.
    assert.deepEqual(await takeDueJobs(quiet.db, 'wrk_fair_3', 4, 60_000, { lanes: ['webhooks'] }), []);
    await asService(quiet, sql`UPDATE jobs SET state = 'done' WHERE kind = ${TEST_JOB.name}`);
  });

  test('the cap per concurrency key counts the jobs running in every worker, and frees with them', async () => {
    const practice = await quiet.newPractice();
    const now = quiet.clock.now();
    await asOperator(quiet.db, async (trx) => {
      await trx
        .insertInto('jobs')
        .values([
          ...Array.from({ length: 10 }, (_, n) =>
            newJobRow(practice.practiceId, TEST_JOB, { n }, now, 0, 'slow'),
          ),
          ...Array.from({ length: 3 }, (_, n) =>
            newJobRow(practice.practiceId, TEST_JOB, { n: 100 + n }, now, 0, 'ok'),
          ),
        ])
        .execute();
    });
    const byKey = (jobs: { payload: Record<string, unknown> }[]) =>
      jobs.map((job) => ((job.payload.n as number) >= 100 ? 'ok' : 'slow')).sort();
    const first = await takeDueJobs(quiet.db, 'wrk_cap_1', 8, 60_000, { lanes: ['claims'], keyCap: 2 });
    assert.deepEqual(byKey(first), ['ok', 'ok', 'slow', 'slow']);
    // Another worker (another process) finds both keys at their cap.
    assert.deepEqual(
      await takeDueJobs(quiet.db, 'wrk_cap_2', 8, 60_000, { lanes: ['claims'], keyCap: 2 }),
      [],
    );
    // One slow job ends (put back for later): one more of that key may start.
    const slow = first.find((job) => (job.payload.n as number) < 100)!;
    await retryJob(quiet.db, slow, 60_000, 'later');
    const third = await takeDueJobs(quiet.db, 'wrk_cap_2', 8, 60_000, { lanes: ['claims'], keyCap: 2 });
    assert.deepEqual(byKey(third), ['slow']);
    await asService(quiet, sql`UPDATE jobs SET state = 'done' WHERE kind = ${TEST_JOB.name}`);
  });

  test("a practice's jobs past the practice cap wait behind it, in every worker, while another practice's job is taken; the cap holding one back is said", async () => {
    const busy = await quiet.newPractice();
    const other = await quiet.newPractice();
    const now = quiet.clock.now();
    await asOperator(quiet.db, async (trx) => {
      await trx
        .insertInto('jobs')
        .values([
          // Six deliveries of one practice to three endpoints: no endpoint's cap is reached first.
          ...Array.from({ length: 6 }, (_, n) =>
            newJobRow(busy.practiceId, TEST_HOOK, { n }, now, 0, `ep_${n % 3}`),
          ),
        ])
        .execute();
    });
    const take = batchedTakes(quiet.db, 'wrk_practice_cap', 60_000);
    const first = await take({ lanes: ['webhooks'], limit: 8, keyCap: 8, practiceCap: 2 });
    assert.equal(first.jobs.length, 2, 'two of the practice, its cap');
    assert.equal(first.heldBack, true, 'the rest wait for one of the two to end');
    // Another practice's delivery, queued after the backlog, is taken at once; the busy one's are not.
    await asOperator(quiet.db, (trx) =>
      trx
        .insertInto('jobs')
        .values(newJobRow(other.practiceId, TEST_HOOK, { n: 100 }, now, 0, 'ep_other'))
        .execute(),
    );
    const elsewhere = await takeDueJobs(quiet.db, 'wrk_practice_cap_2', 8, 60_000, {
      lanes: ['webhooks'],
      keyCap: 8,
      practiceCap: 2,
    });
    assert.deepEqual(
      elsewhere.map((job) => job.practice_id),
      [other.practiceId],
    );
    // One of the busy practice's ends: one more of it may start.
    await asService(quiet, sql`UPDATE jobs SET state = 'done' WHERE id = ${first.jobs[0]!.id}`);
    const next = await take({ lanes: ['webhooks'], limit: 8, keyCap: 8, practiceCap: 2 });
    assert.deepEqual(
      next.jobs.map((job) => job.practice_id),
      [busy.practiceId],
    );
    await asService(quiet, sql`UPDATE jobs SET state = 'done' WHERE kind = ${TEST_HOOK.name}`);
  });

  test("the lanes' takes of one turn share one transaction, and each says whether a key's cap held a due job back", async () => {
    const practice = await quiet.newPractice();
    const now = quiet.clock.now();
    await asOperator(quiet.db, async (trx) => {
      await trx
        .insertInto('jobs')
        .values([
          newJobRow(practice.practiceId, TEST_JOB, { n: 0 }, now),
          ...Array.from({ length: 3 }, (_, n) =>
            newJobRow(practice.practiceId, TEST_HOOK, { n: 1 + n }, now, 0, 'wh_slow'),
          ),
        ])
        .execute();
    });
    const prepared: string[][] = [];
    const take = batchedTakes(quiet.db, 'wrk_batch', 60_000, async (_trx, jobs) => {
      prepared.push(jobs.map((job: JobRow) => job.kind).sort());
    });
    const [claims, hooks] = await Promise.all([
      take({ lanes: ['claims'], limit: 4, keyCap: null }),
      take({ lanes: ['webhooks'], limit: 4, keyCap: 2 }),
    ]);
    assert.deepEqual(
      claims.jobs.map((job) => job.kind),
      [TEST_JOB.name],
    );
    assert.equal(claims.heldBack, false, 'no cap in the claims lane');
    assert.equal(hooks.jobs.length, 2, 'two of the endpoint, its cap');
    assert.equal(hooks.heldBack, true, 'the third waits for one of the two to end');
    assert.deepEqual(
      prepared,
      [[TEST_HOOK.name, TEST_HOOK.name, TEST_JOB.name]],
      "one transaction took both lanes' jobs and prepared them together",
    );
    // The endpoint at its cap: nothing taken, and held back still.
    const full = await take({ lanes: ['webhooks'], limit: 4, keyCap: 2 });
    assert.deepEqual([full.jobs.length, full.heldBack], [0, true]);
    // One ends: the third is taken, and nothing more is held back.
    await asService(quiet, sql`UPDATE jobs SET state = 'done' WHERE id = ${hooks.jobs[0]!.id}`);
    const last = await take({ lanes: ['webhooks'], limit: 4, keyCap: 2 });
    assert.deepEqual([last.jobs.length, last.heldBack], [1, false]);
    assert.deepEqual(await take({ lanes: ['webhooks'], limit: 4, keyCap: 2 }), { jobs: [], heldBack: false });
    await asService(
      quiet,
      sql`UPDATE jobs SET state = 'done' WHERE kind IN (${TEST_JOB.name}, ${TEST_HOOK.name})`,
    );
  });

  test('a job runs in one of the lanes: the database refuses any other', async () => {
    const practice = await quiet.newPractice();
    const row = {
      ...newJobRow(practice.practiceId, TEST_JOB, { n: 0 }, quiet.clock.now()),
      lane: 'elsewhere',
    };
    await assert.rejects(
      asOperator(quiet.db, (trx) =>
        trx
          .insertInto('jobs')
          .values(row as never)
          .execute(),
      ),
      /check constraint|violates/i,
    );
  });
});
