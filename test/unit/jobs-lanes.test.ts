// A lane's slots without a database: a slot held for a follow-on job is never one that a take on its
// way may fill, and a follow-on handed over once the lane has stopped is not run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import type { JobRow } from '../../src/jobs/job-row.ts';
import { pollLane } from '../../src/jobs/lanes.ts';

const log = { warn() {} } as unknown as FastifyBaseLogger;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A lane of two slots, polled a minute apart, whose takes and jobs end when the test says; a take
 * answers `heldBack` as the test last set it.
 */
function manualLane() {
  const takes: ((jobs: JobRow[]) => void)[] = [];
  const answer = { heldBack: false };
  const jobs: (() => void)[] = [];
  const ran: string[] = [];
  const lane = pollLane({
    lane: 'claims',
    limits: { concurrency: 2, keyCap: null, practiceCap: null },
    settings: { jobPollMs: 60_000, jobPollMaxMs: 60_000 },
    take: () =>
      new Promise<JobRow[]>((resolve) => takes.push(resolve)).then((jobs) => ({
        jobs,
        heldBack: answer.heldBack,
      })),
    run: (job) => {
      ran.push(job.id);
      return new Promise<void>((resolve) => jobs.push(resolve));
    },
    log,
  });
  const until = async (check: () => boolean) => {
    while (!check()) await turn();
  };
  return { lane, takes, jobs, ran, until, answer };
}

test('a lane holds no slot for a follow-on while a take that may fill every free slot is on its way', async () => {
  const { lane, takes, jobs, until } = manualLane();
  try {
    await until(() => takes.length === 1);
    // Both slots are the take's until it answers.
    assert.equal(lane.reserve(), false);
    takes[0]!([{ id: 'job_1' } as JobRow]);
    await until(() => lane.running === 1);
    // One slot runs the job taken, the other is free: one follow-on may hold it, and no more.
    assert.equal(lane.reserve(), true);
    assert.equal(lane.reserve(), false);
    lane.release();
    assert.equal(lane.reserve(), true);
    lane.release();
  } finally {
    for (const end of jobs) end();
    takes.at(-1)?.([]);
    await lane.stop();
  }
});

test('a follow-on handed over once its lane has stopped is not run', async () => {
  const { lane, takes, ran, until } = manualLane();
  await until(() => takes.length === 1);
  takes[0]!([]);
  await turn();
  assert.equal(lane.reserve(), true);
  await lane.stop();
  assert.equal(lane.adopt({ id: 'job_2' } as JobRow), undefined);
  assert.deepEqual(ran, []);
  assert.equal(lane.running, 0);
});

for (const heldBack of [true, false]) {
  test(`a keyed job ending makes the lane look again at once ${heldBack ? 'when' : 'only when'} its latest take left a job behind a key's cap`, async () => {
    const { lane, takes, jobs, until, answer } = manualLane();
    try {
      await until(() => takes.length === 1);
      answer.heldBack = heldBack;
      // One of two slots taken, by a delivery to an endpoint.
      takes[0]!([{ id: 'job_1', concurrency_key: 'wh_1' } as JobRow]);
      await until(() => lane.running === 1);
      jobs[0]!();
      await until(() => lane.running === 0);
      for (let i = 0; i < 20; i++) await turn();
      assert.equal(takes.length, heldBack ? 2 : 1, heldBack ? 'it looked again' : 'it waits for its poll');
    } finally {
      for (const end of jobs) end();
      takes.at(-1)?.([]);
      await lane.stop();
    }
  });
}
