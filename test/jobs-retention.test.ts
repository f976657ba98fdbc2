// Finished jobs (done or failed) are deleted by the worker's periodic task once they finished longer
// ago than JOB_RETENTION_DAYS, on the service's clock; a job finished more recently stays, and a
// queued job stays whatever its age.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { periodicTasks } from '../src/job-catalogue.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { newId } from '../src/platform/ids.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describeEachBackend('finished job retention', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend, { env: { JOB_RETENTION_DAYS: '3' } });
  });
  after(async () => {
    await svc.close();
  });

  test('jobs finished longer ago than the retention are deleted, the rest stay', async () => {
    const { practiceId } = await svc.newPractice();
    const now = svc.clock.now();
    const ago = (ms: number) => new Date(now.getTime() - ms);
    const job = (state: 'queued' | 'done' | 'failed', finishedAt: Date | null, createdAt: Date) => ({
      practice_id: practiceId,
      id: newId('job'),
      kind: 'claim.submit',
      payload: JSON.stringify({ claimId: newId('claim') }),
      // Never due, so that no worker takes the queued one.
      run_at: new Date('2999-01-01T00:00:00Z'),
      created_at: createdAt,
      state,
      finished_at: finishedAt,
      last_error: state === 'failed' ? 'the insurer refused the message' : null,
    });
    const rows = {
      doneLongAgo: job('done', ago(3 * DAY + MINUTE), ago(3 * DAY + 2 * MINUTE)),
      failedLongAgo: job('failed', ago(10 * DAY), ago(10 * DAY)),
      doneRecently: job('done', ago(3 * DAY - MINUTE), ago(3 * DAY)),
      failedRecently: job('failed', ago(DAY), ago(DAY)),
      queuedLongAgo: job('queued', null, ago(30 * DAY)),
    };
    await asOperator(svc.db, (trx) => trx.insertInto('jobs').values(Object.values(rows)).execute());

    const task = periodicTasks(svc.deps.config).find((t) => t.name === 'purge-finished-jobs');
    assert.ok(task, 'the purge is scheduled');
    assert.ok(task.everyMs <= 60 * MINUTE);
    assert.equal(await task.run({ db: svc.db, clock: svc.clock }), 2);

    const left = await asOperator(svc.db, (trx) =>
      trx.selectFrom('jobs').select('id').where('practice_id', '=', practiceId).execute(),
    );
    assert.deepEqual(
      left.map((row) => row.id).sort(),
      [rows.doneRecently.id, rows.failedRecently.id, rows.queuedLongAgo.id].sort(),
    );
    // A second run finds nothing more to delete.
    assert.equal(await task.run({ db: svc.db, clock: svc.clock }), 0);
  });
});
