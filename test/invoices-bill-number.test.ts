// A bill's invoice number is given in its transaction's COMMIT (src/invoices/store.ts,
// numberInvoiceAtCommit): until then the invoice carries a provisional number. Whatever the bill
// answers, stores for a replay, or queues for the insurer names the number, never the stand-in.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asOperator } from '../src/platform/db/transaction.ts';
import { newPatient, newWorld, type Procedure, recordVisit, type World } from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { bill } from './support/factories.ts';

const PROVISIONAL = /#inv_/;
const ONE_LINE: Procedure[] = [{ code: '0190', dx: ['J06.9'] }];

describeEachBackend("a bill's invoice number", (backend) => {
  let svc: TestService;
  let w: World;
  before(async () => {
    svc = await startService(backend);
    w = await newWorld(svc);
  });
  after(async () => {
    await svc.close();
  });

  test('reaches the answer, its replay, the stored answer and the queued submission', async () => {
    const { patientId } = await newPatient(w);
    const encounter = await recordVisit(w, patientId, ONE_LINE);
    const key = `bill-number-${encounter.id}`;
    const billed = await bill(w.api, encounter.id, { issue: true, submitClaim: true }, key);
    assert.equal(billed.status, 201, billed.text);
    assert.equal(billed.body.claimQueued, true);
    const number: string = billed.body.invoice.number;
    assert.match(number, /^INV-\d{6}$/);
    assert.doesNotMatch(billed.text, PROVISIONAL);

    const replayed = await bill(w.api, encounter.id, { issue: true, submitClaim: true }, key);
    assert.equal(replayed.status, 201);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayed.text, billed.text, 'the replay is the first answer, number and all');

    const { stored, submission, invoice } = await asOperator(svc.db, async (trx) => ({
      stored: await trx
        .selectFrom('idempotency_keys')
        .select('response_body')
        .where('practice_id', '=', w.practiceId)
        .where('key', '=', key)
        .executeTakeFirstOrThrow(),
      submission: await trx
        .selectFrom('jobs')
        .select('payload')
        .where('practice_id', '=', w.practiceId)
        .where('kind', '=', 'claim.submit')
        .executeTakeFirstOrThrow(),
      invoice: await trx
        .selectFrom('invoices')
        .select('number')
        .where('practice_id', '=', w.practiceId)
        .where('id', '=', billed.body.invoice.id)
        .executeTakeFirstOrThrow(),
    }));
    assert.equal(invoice.number, number);
    assert.equal(stored.response_body, billed.text);
    const prepared = (submission.payload as { prepared: { submission: { invoiceNumber: string } } }).prepared;
    assert.equal(prepared.submission.invoiceNumber, number, 'the insurer is sent the invoice number');
  });

  test('reaches the reasons a bill gives for what it skipped', async () => {
    const { patientId } = await newPatient(w);
    // No procedure done: nothing to bill, so the invoice is not issued and its claim not sent.
    const encounter = await recordVisit(w, patientId, ONE_LINE);
    await asOperator(svc.db, (trx) =>
      trx
        .updateTable('encounter_procedures')
        .set({ status: 'not_done' })
        .where('encounter_id', '=', encounter.id)
        .execute(),
    );
    const billed = await bill(w.api, encounter.id, { issue: true, submitClaim: true });
    assert.equal(billed.status, 201, billed.text);
    assert.equal(billed.body.issued, false);
    assert.equal(billed.body.claimQueued, false);
    const number: string = billed.body.invoice.number;
    assert.match(number, /^INV-\d{6}$/);
    assert.ok(billed.body.issueSkippedReason.includes(number), billed.body.issueSkippedReason);
    assert.ok(billed.body.claimSkippedReason.includes(number), billed.body.claimSkippedReason);
    assert.doesNotMatch(billed.text, PROVISIONAL);
  });

  test('twenty bills at once with their claims: each answer and submission names its own number', async () => {
    const patients = await Promise.all(Array.from({ length: 4 }, () => newPatient(w)));
    const visits = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        recordVisit(w, patients[i % patients.length]!.patientId, ONE_LINE),
      ),
    );
    const billed = await Promise.all(
      visits.map((v) => bill(w.api, v.id, { issue: true, submitClaim: true })),
    );
    for (const answer of billed) assert.equal(answer.status, 201, answer.text);
    const submissions = await asOperator(svc.db, (trx) =>
      trx
        .selectFrom('jobs')
        .select('payload')
        .where('practice_id', '=', w.practiceId)
        .where('kind', '=', 'claim.submit')
        .execute(),
    );
    const sent = new Map(
      submissions.map(({ payload }) => {
        const { prepared } = payload as {
          prepared: { invoiceId: string; submission: { invoiceNumber: string } };
        };
        return [prepared.invoiceId, prepared.submission.invoiceNumber];
      }),
    );
    for (const answer of billed) {
      assert.equal(
        sent.get(answer.body.invoice.id),
        answer.body.invoice.number,
        'its submission names its number',
      );
    }
    const numbers = billed.map((a) => Number(a.body.invoice.number.slice(4))).sort((a, b) => a - b);
    assert.deepEqual(
      numbers,
      Array.from({ length: 20 }, (_, i) => numbers[0]! + i),
      'no gap, no repeat',
    );
  });
});
