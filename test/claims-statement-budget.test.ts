// What one claim costs the database, counted by the service's own counters
// (src/platform/db/statement-counts.ts): bill with issue and submitClaim, then the worker's jobs (the
// submission and the insurer's answer, the remittance, and a webhook for each of the claim's two
// status changes) until none is left. A budget of counted statements and transactions: deterministic,
// whatever the machine's speed. Issuing also tells the patient: this patient has no e-mail address, as
// the benchmark's have none, so the bill records that at once and queues no e-mail job.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { statementCounts } from '../src/platform/db/statement-counts.ts';
import { newPatient, newWorld, readClaim, type World } from './claims-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';
import { bill, createEncounter } from './support/factories.ts';
import { countsSince } from './support/statement-counts.ts';
import { addEndpoint, Receiver } from './webhooks-fixtures.ts';

/** At most this many statements (BEGIN and COMMIT included) and transactions per claim. */
const BUDGET = { statements: 60, transactions: 8 };

describeEachBackend('claims: statements and transactions per claim', (backend) => {
  let svc: TestService;
  let receiver: Receiver;
  let w: World;
  before(async () => {
    // No heartbeat and no key refresh inside the measured claim: they are the process's, not the claim's.
    svc = await startService(backend, {
      env: { DATABASE_LISTEN_HEARTBEAT_MS: '60000', API_KEY_CACHE_SECONDS: '3600' },
    });
    receiver = await Receiver.forService(svc);
    w = await newWorld(svc);
    await addEndpoint(svc, w.practiceId, receiver, { eventTypes: ['claim.status_changed'] });
  });
  after(async () => {
    await receiver.close();
    await svc.close();
  });

  /**
   * Records a two-procedure visit (as the benchmark's), bills it with issue and submitClaim, and lets the
   * worker take once; the counts of the bill and of the jobs.
   */
  async function claim(patientId: string) {
    const end = svc.clock.now().getTime() - 60 * 60 * 1000;
    const visit = await createEncounter(w.api, {
      patientId,
      practitionerId: w.practitionerId,
      start: new Date(end - 30 * 60 * 1000).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses: [{ code: 'J06.9' }, { code: 'I10' }],
      procedures: [
        { code: '0190', diagnosisCodes: ['J06.9'] },
        { code: '0191', diagnosisCodes: ['I10'] },
      ],
    });
    const atBill = statementCounts();
    const billed = await bill(w.api, visit.id, { issue: true, submitClaim: true });
    const billCounts = countsSince(atBill);
    assert.equal(billed.status, 201, billed.text);
    assert.equal(billed.body.claimQueued, true);
    const told = await svc.admin('GET', `/practices/${w.practiceId}/notifications`);
    const note = (told.body.data as Array<Record<string, string>>).find(
      (n) => n.subjectId === billed.body.invoice.id,
    );
    assert.equal(note?.delivery, 'no_address', 'the patient without an address is recorded so by the bill');
    const atJobs = statementCounts();
    // One take: the submission and the first webhook; the answer's remittance and webhook follow on.
    const ran = await svc.worker.takeOnce();
    const jobs = countsSince(atJobs);
    assert.equal(ran, 4, 'the submission, the remittance and both webhooks ran after one take');
    assert.equal(await svc.worker.drain(), 0, 'nothing was left for another take');
    return { invoiceId: billed.body.invoice.id as string, bill: billCounts, jobs };
  }

  test(`a claim, from bill to its two webhooks, sends at most ${BUDGET.statements} statements in ${BUDGET.transactions} transactions, the patient told`, async (t) => {
    const { patientId } = await newPatient(w);
    // The first claim warms what a running service has warm: the key's cache, prepared statements.
    await claim(patientId);
    const delivered = receiver.requests.length;
    const measured = await claim(patientId);
    assert.equal((await readClaim(w, measured.invoiceId)).status, 'accepted');
    const invoice = await w.api('GET', `/invoices/${measured.invoiceId}`);
    assert.equal(invoice.body.status, 'balanced', 'the remittance paid the invoice');
    assert.equal(receiver.requests.length - delivered, 2, 'both status changes were delivered');
    const total = {
      statements: measured.bill.statements + measured.jobs.statements,
      roundTrips: measured.bill.roundTrips + measured.jobs.roundTrips,
      transactions: measured.bill.transactions + measured.jobs.transactions,
    };
    t.diagnostic(`bill ${JSON.stringify(measured.bill)}`);
    t.diagnostic(`jobs ${JSON.stringify(measured.jobs)}`);
    t.diagnostic(`claim ${JSON.stringify(total)}`);
    assert.ok(
      total.statements <= BUDGET.statements,
      `${total.statements} statements per claim, above ${BUDGET.statements}`,
    );
    assert.ok(
      total.transactions <= BUDGET.transactions,
      `${total.transactions} transactions per claim, above ${BUDGET.transactions}`,
    );
  });
});
