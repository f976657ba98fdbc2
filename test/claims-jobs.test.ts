// The claim jobs survive what workers do wrong: a job taken by a worker that died is taken again only
// once its lease has run out (and the dead worker can no longer finish it: its try fails, so the
// transaction it would record its work in is undone); a submit job run twice,
// together or one after the other, records the insurer's answer once; and the sandbox insurer
// answers a repeated submission id from its memory instead of adjudicating again.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { finishJob, isJobLeaseLost, takeDueJobs } from '../src/jobs/queue.ts';
import { asOperator } from '../src/platform/db/transaction.ts';
import { newId } from '../src/platform/ids.ts';
import {
  assertStatusEvents,
  claimRow,
  eventCount,
  issuedInvoice,
  jobsOfClaim,
  newWorld,
  payments,
  readClaim,
  sendClaim,
  type World,
} from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const LEASE_MS = 60_000;

describeEachBackend('claim jobs', (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  test('the lease is the JOB_LEASE_SECONDS default of 60 s', () => {
    assert.equal(svc.deps.config.jobLeaseSeconds * 1000, LEASE_MS);
  });

  test('a job whose worker died is taken again only once its lease runs out', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    const taken = await takeDueJobs(svc.db, 'wrk_dies', 50, LEASE_MS);
    const dead = taken.find((j) => (j.payload as { claimId?: string }).claimId === sent.id);
    assert.ok(dead, 'the dead worker took the submit job');
    assert.equal(dead.kind, 'claim.submit');

    assert.equal(await svc.worker.drain(), 0, 'a leased job is not taken');
    assert.equal((await readClaim(w, invoiceId)).status, 'submitting');
    svc.clock.advance(LEASE_MS - 1_000);
    assert.equal(await svc.worker.drain(), 0, 'not before the lease runs out');
    assert.equal((await readClaim(w, invoiceId)).status, 'submitting');

    svc.clock.advance(1_000);
    assert.ok((await svc.worker.drain()) >= 1, 'taken again once the lease ran out');
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    const [job] = (await jobsOfClaim(svc, sent.id)).filter((j) => j.kind === 'claim.submit');
    assert.equal(job!.state, 'done');
    assert.equal(job!.attempts, 2);
    assert.notEqual(job!.locked_by, 'wrk_dies');

    // The dead worker coming back cannot finish a job it no longer holds: it is told so, and the job's
    // row stays as it is.
    svc.clock.advance(1_000);
    await assert.rejects(
      asOperator(svc.db, (trx) => finishJob(trx, dead, svc.clock.now())),
      isJobLeaseLost,
    );
    const [unchanged] = (await jobsOfClaim(svc, sent.id)).filter((j) => j.kind === 'claim.submit');
    assert.deepEqual(unchanged, job);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a submit job run twice at once records one answer', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    const [original] = await jobsOfClaim(svc, sent.id);
    // A second copy of the same submit job (same claim, same submission id).
    await svc.db.kysely
      .insertInto('jobs')
      .values({
        practice_id: original!.practice_id,
        id: newId('job'),
        kind: original!.kind,
        payload: JSON.stringify(original!.payload),
        run_at: original!.run_at,
        created_at: original!.created_at,
        locked_by: null,
        locked_until: null,
        last_error: null,
        finished_at: null,
      })
      .execute();
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.items.length, 2, 'each line once');
    const submits = (await jobsOfClaim(svc, sent.id)).filter((j) => j.kind === 'claim.submit');
    assert.deepEqual(
      submits.map((j) => j.state),
      ['done', 'done'],
    );
    const remittances = (await jobsOfClaim(svc, sent.id)).filter((j) => j.kind === 'insurer.remittance');
    assert.equal(remittances.length, 1, 'one answer, one remittance');
    assert.equal((await payments(w, invoiceId)).length, 1);
    await assertStatusEvents(svc, invoiceId, 2);
  });

  test('a submit job re-queued after it was done changes nothing', async () => {
    const { invoiceId } = await issuedInvoice(w);
    const sent = await sendClaim(w, invoiceId);
    await svc.worker.drain();
    const before = await readClaim(w, invoiceId);
    const rowBefore = await claimRow(svc, invoiceId);
    const [job] = (await jobsOfClaim(svc, sent.id)).filter((j) => j.kind === 'claim.submit');
    assert.equal(job!.state, 'done');

    await svc.db.kysely
      .updateTable('jobs')
      .set({ state: 'queued', finished_at: null, locked_by: null, locked_until: null })
      .where('id', '=', job!.id)
      .execute();
    assert.equal(await svc.worker.drain(), 1, 'the job ran again');
    const again = (await jobsOfClaim(svc, sent.id)).find((j) => j.id === job!.id);
    assert.equal(again!.state, 'done');

    assert.deepEqual(await readClaim(w, invoiceId), before, 'same status, reference and items');
    const rowAfter = await claimRow(svc, invoiceId);
    assert.equal(rowAfter.updated_at.getTime(), rowBefore.updated_at.getTime(), 'the claim was not written');
    await assertStatusEvents(svc, invoiceId, 2);
    assert.equal((await payments(w, invoiceId)).length, 1);
    assert.equal(await eventCount(svc, invoiceId, 'payment.created'), 1);
  });

  test('the sandbox insurer answers a repeated submission id from its memory', async () => {
    const { invoiceId } = await issuedInvoice(w);
    await sendClaim(w, invoiceId);
    const { submission_id: submissionId } = await claimRow(svc, invoiceId);
    // What the sandbox remembers for this id is what it answers: seed a memory the rules would
    // never produce, and the claim records exactly that.
    const remembered = {
      status: 'partially_accepted',
      message: null,
      authorizationReference: 'SBX-REMEMBERED',
      lines: [
        {
          lineNumber: 1,
          decision: 'approved',
          submitted: 49_500,
          benefit: 40_000,
          rejections: [],
          warnings: [],
        },
        {
          lineNumber: 2,
          decision: 'denied',
          submitted: 74_250,
          benefit: 0,
          rejections: [{ code: 'REMEMBERED', description: 'from memory' }],
          warnings: [],
        },
      ],
    };
    await svc.db.kysely
      .insertInto('sandbox_insurer_messages')
      .values({ message_id: submissionId, kind: 'submit', answer: JSON.stringify(remembered) })
      .execute();
    await svc.worker.drain();
    const claim = await readClaim(w, invoiceId);
    assert.equal(claim.status, 'partially_accepted');
    assert.equal(claim.authorizationReference, 'SBX-REMEMBERED');
    assert.deepEqual(
      claim.items.map((i: { benefit: number; rejections: Array<{ code: string }> }) => [
        i.benefit,
        i.rejections.map((r) => r.code),
      ]),
      [
        [40_000, []],
        [0, ['REMEMBERED']],
      ],
    );
  });

  test('the sandbox stores each answer once and repeats it for the same id, whatever the message says', async () => {
    const { invoiceId } = await issuedInvoice(w);
    await sendClaim(w, invoiceId);
    await svc.worker.drain();
    const { submission_id: submissionId, coverage_id } = await claimRow(svc, invoiceId);
    const stored = await svc.db.kysely
      .selectFrom('sandbox_insurer_messages')
      .selectAll()
      .where('message_id', '=', submissionId)
      .execute();
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.kind, 'submit');
    const claim = await readClaim(w, invoiceId);
    assert.equal(
      (stored[0]!.answer as { authorizationReference: string }).authorizationReference,
      claim.authorizationReference,
    );

    const coverage = await svc.db.kysely
      .selectFrom('coverages')
      .select('plan_id')
      .where('id', '=', coverage_id)
      .executeTakeFirstOrThrow();
    // The same id again, now saying the member is to be rejected: the first answer comes back.
    const repeat = await svc.deps.insurer.submit({
      submissionId,
      claimId: claim.id,
      invoiceNumber: 'X',
      currency: 'ZAR',
      placeOfServiceCode: null,
      member: {
        planId: coverage.plan_id,
        memberNumber: 'REJECT-0',
        dependentCode: null,
        membershipActive: true,
      },
      lines: [],
    });
    assert.equal(repeat.status, 'accepted');
    assert.equal(repeat.authorizationReference, claim.authorizationReference);
    assert.equal(repeat.lines.length, 2);
    const after = await svc.db.kysely
      .selectFrom('sandbox_insurer_messages')
      .select('message_id')
      .where('message_id', '=', submissionId)
      .execute();
    assert.equal(after.length, 1, 'nothing new stored');
  });
  test('a job whose payload does not fit its kind is failed at once, not retried', async () => {
    const id = newId('job');
    const now = svc.clock.now();
    const due = sql<Date>`now()`;
    await asOperator(svc.db, (trx) =>
      trx
        .insertInto('jobs')
        .values({
          practice_id: w.practiceId,
          id,
          kind: 'claim.submit',
          payload: JSON.stringify({ claimId: 42 }),
          run_at: due,
          created_at: now,
          locked_by: null,
          locked_until: null,
          last_error: null,
          finished_at: null,
        })
        .execute(),
    );
    await svc.worker.drain();
    const job = await asOperator(svc.db, (trx) =>
      trx.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
    );
    assert.equal(job.state, 'failed');
    assert.equal(job.attempts, 1);
    assert.match(job.last_error ?? '', /payload of claim\.submit does not fit its schema/);
  });
});
