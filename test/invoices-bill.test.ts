// Billing a visit (POST /encounters/{id}/bill): lines from the procedures that were done with their
// diagnoses and one primary, dates in the practice's time zone, dueDate from the payment terms,
// per-practice gap-free numbers, VAT, issuing in the same call (notification and invoice.issued
// event), permissions checked before anything is created, and one invoice per visit under concurrency.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import {
  addCoverage,
  asOps,
  bill,
  billedInvoice,
  billingPractice,
  DAY,
  HOUR,
  localDate,
  MINUTE,
  newPatient,
  newVisit,
  plusDays,
  refusedWith,
  TARIFF_URL,
} from './billing-fixtures.ts';
import { addClient } from './contract-suites.ts';
import { apiClient, describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('bill a visit', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend, { poolSize: 24 });
  });
  after(async () => {
    await svc.close();
  });

  test("one line per procedure done, with the procedure's diagnoses (else the visit's) and the first primary", async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId, {
      diagnoses: [{ code: 'J06.9' }, { code: 'I10' }, { code: 'E11.9' }],
      procedures: [
        { code: '0190', diagnosisCodes: ['I10', 'J06.9'] },
        { code: '0191' },
        { code: '0192', diagnosisCodes: ['E11.9'] },
        { code: '0201', diagnosisCodes: ['J06.9'] },
      ],
    });
    // a procedure that was not done is not billed
    await asOps(svc, (trx) =>
      trx
        .updateTable('encounter_procedures')
        .set({ status: 'not_done' })
        .where('encounter_id', '=', visit.id)
        .where('code', '=', '0201')
        .execute(),
    );
    const answer = await bill(practice.api, visit.id);
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.headers.get('location'), `${svc.baseUrl}/api/v1/invoices/${answer.body.invoice.id}`);
    const { invoice, ...rest } = answer.body;
    assert.deepEqual(rest, {
      object: 'bill_result',
      issued: null,
      issueSkippedReason: null,
      claimQueued: null,
      claimSkippedReason: null,
    });
    assert.match(invoice.id, /^inv_/);
    assert.equal(invoice.status, 'draft');
    assert.equal(invoice.claimStatus, null);
    assert.equal(invoice.coverageId, null);
    assert.equal(invoice.patientId, patientId);
    assert.deepEqual(invoice.encounterIds, [visit.id]);
    assert.equal(invoice.recipientName, 'Lerato Grace Dlamini');
    assert.equal(invoice.currency, 'ZAR');
    const wording = (code: string) => visit.procedures.find((p: { code: string }) => p.code === code).display;
    const dx = (code: string, primary: boolean) => ({
      system: 'http://hl7.org/fhir/sid/icd-10',
      code,
      display: visit.diagnoses.find((d: { code: string }) => d.code === code).display,
      primary,
    });
    assert.deepEqual(
      invoice.lineItems.map((l: Record<string, unknown>) => ({ ...l, id: undefined })),
      [
        ['0190', 55000, [dx('I10', true), dx('J06.9', false)]],
        ['0191', 82500, [dx('J06.9', true), dx('I10', false), dx('E11.9', false)]],
        ['0192', 121000, [dx('E11.9', true)]],
      ].map(([code, price, diagnoses]) => ({
        id: undefined,
        // the practice's calendar date of the visit (Johannesburg, by default), not the UTC one
        serviceDate: localDate('Africa/Johannesburg', new Date(visit.start)),
        serviceDateEnd: null,
        system: TARIFF_URL,
        code,
        description: wording(code as string),
        modifiers: [],
        quantity: 1,
        unitPrice: price,
        subtotal: price,
        total: price,
        pricingSource: 'governing_body',
        diagnoses,
      })),
    );
    assert.equal(invoice.totalNet, 55000 + 82500 + 121000);
    assert.equal(invoice.totalGross, invoice.totalNet);
    assert.equal(invoice.amountPaid, 0);
    assert.equal(invoice.balanceDue, invoice.totalGross);
    const read = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body, invoice);
  });

  test("invoice date, dueDate and service dates are the practice's calendar dates", async () => {
    // an instant at which Auckland is already a day ahead of UTC and Los Angeles is not
    const yesterday = new Date(svc.clock.now().getTime() - DAY);
    const instant = Date.UTC(
      yesterday.getUTCFullYear(),
      yesterday.getUTCMonth(),
      yesterday.getUTCDate(),
      12,
      30,
    );
    svc.clock.set(instant);
    try {
      const utcDate = new Date(instant).toISOString().slice(0, 10);
      const seen: Record<string, { date: string; serviceDate: string }> = {};
      for (const timezone of ['Pacific/Auckland', 'America/Los_Angeles', 'Africa/Johannesburg']) {
        const practice = await billingPractice(svc, { timezone, paymentTermsDays: 14 });
        const start = new Date(instant - 20 * MINUTE);
        const invoice = await billedInvoice(svc, practice, { start, end: new Date(instant - 10 * MINUTE) });
        const now = svc.clock.now();
        assert.equal(invoice.date, localDate(timezone, now), timezone);
        assert.equal(invoice.dueDate, plusDays(invoice.date, 14), timezone);
        assert.equal(invoice.lineItems[0].serviceDate, localDate(timezone, start), timezone);
        seen[timezone] = { date: invoice.date, serviceDate: invoice.lineItems[0].serviceDate };
      }
      assert.equal(seen['Pacific/Auckland']!.serviceDate, plusDays(utcDate, 1));
      assert.equal(seen['Pacific/Auckland']!.date, plusDays(utcDate, 1));
      assert.equal(seen['America/Los_Angeles']!.serviceDate, utcDate);
      assert.equal(seen['Africa/Johannesburg']!.date, utcDate);
    } finally {
      svc.clock.reset();
    }
  });

  test('a visit over two local days keeps serviceDateEnd; default terms are 30 days', async () => {
    const practice = await billingPractice(svc, { timezone: 'Africa/Johannesburg' });
    const now = svc.clock.now();
    const end = new Date(now.getTime() - 2 * DAY);
    const start = new Date(end.getTime() - 26 * HOUR);
    const invoice = await billedInvoice(svc, practice, { start, end });
    const line = invoice.lineItems[0];
    assert.equal(line.serviceDate, localDate('Africa/Johannesburg', start));
    assert.equal(line.serviceDateEnd, localDate('Africa/Johannesburg', end));
    assert.equal(invoice.dueDate, plusDays(invoice.date, 30));
  });

  test('numbers carry the practice prefix and count per practice from 1', async () => {
    const first = await billingPractice(svc, { invoiceNumberPrefix: 'ACME-' });
    const second = await billingPractice(svc);
    const a1 = await billedInvoice(svc, first);
    const b1 = await billedInvoice(svc, second);
    const a2 = await billedInvoice(svc, first);
    assert.equal(a1.number, 'ACME-000001');
    assert.equal(a2.number, 'ACME-000002');
    assert.equal(b1.number, 'INV-000001');
  });

  test('VAT from the billing settings: totalGross is totalNet plus the tax rounded half away from zero', async () => {
    const practice = await billingPractice(svc, { vatRateBasisPoints: 1250 });
    const invoice = await billedInvoice(svc, practice, {
      procedures: [{ code: '0190' }, { code: '0191' }],
    });
    assert.equal(invoice.totalNet, 137500);
    // 137500 × 12.5% = 17187.5 → 17188
    assert.equal(invoice.totalGross, 137500 + 17188);
    assert.equal(invoice.balanceDue, invoice.totalGross);
  });

  test('issue: true issues it in the same call, tells the patient and writes invoice.issued', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const answer = await bill(practice.api, visit.id, { issue: true });
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.body.issued, true);
    assert.equal(answer.body.issueSkippedReason, null);
    assert.equal(answer.body.claimQueued, null);
    assert.equal(answer.body.invoice.status, 'issued');
    const invoiceId = answer.body.invoice.id;
    const { notifications, events } = await asOps(svc, async (trx) => ({
      notifications: await trx
        .selectFrom('notifications')
        .selectAll()
        .where('practice_id', '=', practice.practiceId)
        .execute(),
      events: await trx
        .selectFrom('events')
        .selectAll()
        .where('practice_id', '=', practice.practiceId)
        .execute(),
    }));
    assert.equal(notifications.length, 1);
    assert.equal(notifications[0]!.recipient, 'patient');
    assert.equal(notifications[0]!.patient_id, patientId);
    assert.equal(notifications[0]!.subject_id, invoiceId);
    assert.match(notifications[0]!.message, new RegExp(answer.body.invoice.number));
    assert.deepEqual(
      events.map((e) => [e.type, e.object_type, e.object_id]),
      [['invoice.issued', 'invoice', invoiceId]],
    );
  });

  test('submitClaim with issue: the invoice is issued even when the claim cannot be sent, and says why', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const answer = await bill(practice.api, visit.id, { issue: true, submitClaim: true });
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.body.issued, true);
    assert.equal(answer.body.claimQueued, false, 'no coverage: nothing to claim against');
    assert.equal(typeof answer.body.claimSkippedReason, 'string');
    assert.ok(answer.body.claimSkippedReason.length > 0);
    assert.equal(answer.body.invoice.status, 'issued');
  });

  test('issue without INVOICES:UPDATE, or submitClaim without CLAIMS:SUBMIT, is 403 and creates nothing', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const noUpdate = await addClient(svc, practice.practiceId, {
      permissions: PERMISSIONS.filter((p) => p !== 'INVOICES:UPDATE'),
    });
    const noSubmit = await addClient(svc, practice.practiceId, {
      permissions: PERMISSIONS.filter((p) => p !== 'CLAIMS:SUBMIT'),
    });
    const refusedIssue = await bill(apiClient(svc, noUpdate.key), visit.id, { issue: true });
    refusedWith(refusedIssue, 403, 'forbidden');
    assert.match(refusedIssue.body.detail, /INVOICES:UPDATE/);
    const refusedClaim = await bill(apiClient(svc, noSubmit.key), visit.id, {
      issue: true,
      submitClaim: true,
    });
    refusedWith(refusedClaim, 403, 'forbidden');
    assert.match(refusedClaim.body.detail, /CLAIMS:SUBMIT/);
    const listed = await practice.api('GET', `/invoices?encounterId=${visit.id}`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.data, [], 'no invoice was created');
    // the same clients may bill without the extra request
    const plain = await bill(apiClient(svc, noUpdate.key), visit.id);
    assert.equal(plain.status, 201, plain.text);
    assert.equal(plain.body.invoice.number, 'INV-000001', 'refusals took no number');
  });

  test('submitClaim without issue is 422 naming submitClaim, and creates nothing', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    for (const body of [{ submitClaim: true }, { submitClaim: true, issue: false }]) {
      refusedWith(await bill(practice.api, visit.id, body), 422, 'validation_failed', ['submitClaim']);
    }
    const listed = await practice.api('GET', `/invoices?encounterId=${visit.id}`);
    assert.deepEqual(listed.body.data, []);
  });

  test('a visit already billed answers 409 duplicate naming the invoice', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const first = await bill(practice.api, visit.id);
    assert.equal(first.status, 201, first.text);
    const again = await bill(practice.api, visit.id, { issue: true });
    refusedWith(again, 409, 'duplicate');
    assert.ok(again.body.detail.includes(first.body.invoice.id), again.body.detail);
    const read = await practice.api('GET', `/invoices/${first.body.invoice.id}`);
    assert.equal(read.body.status, 'draft', 'the refused bill did not issue the first invoice');
  });

  test('ten concurrent bills of one visit make exactly one invoice', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const answers = await Promise.all(Array.from({ length: 10 }, () => bill(practice.api, visit.id)));
    const created = answers.filter((a) => a.status === 201);
    assert.equal(created.length, 1, answers.map((a) => a.status).join(','));
    for (const a of answers.filter((x) => x.status !== 201)) refusedWith(a, 409, 'duplicate');
    const listed = await practice.api('GET', `/invoices?encounterId=${visit.id}`);
    assert.deepEqual(
      listed.body.data.map((i: { id: string }) => i.id),
      [created[0]!.body.invoice.id],
    );
    assert.equal(created[0]!.body.invoice.number, 'INV-000001');
  });

  test('twenty visits billed at once get distinct numbers with no gaps', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const visits = [];
    for (let i = 0; i < 20; i++)
      visits.push(await newVisit(svc, practice.api, practice.practitionerId, patientId));
    const answers = await Promise.all(visits.map((v) => bill(practice.api, v.id)));
    for (const a of answers) assert.equal(a.status, 201, a.text);
    const numbers = answers.map((a) => a.body.invoice.number as string).sort();
    assert.deepEqual(
      numbers,
      Array.from({ length: 20 }, (_, i) => `INV-${String(i + 1).padStart(6, '0')}`),
    );
  });

  test("an unknown or foreign visit is 404; a coverage that is not the patient's is 422 naming coverageId", async () => {
    const practice = await billingPractice(svc);
    const other = await billingPractice(svc);
    refusedWith(await bill(practice.api, 'enc_doesnotexist0000000'), 404, 'not_found');
    const theirPatient = await newPatient(other.api);
    const theirVisit = await newVisit(svc, other.api, other.practitionerId, theirPatient);
    refusedWith(await bill(practice.api, theirVisit.id), 404, 'not_found');
    const theirCoverage = await addCoverage(other.api, theirPatient, 'pln_ubuntu_classic');

    const patientId = await newPatient(practice.api);
    const neighbour = await newPatient(practice.api);
    const neighbourCoverage = await addCoverage(practice.api, neighbour, 'pln_ubuntu_classic');
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    for (const coverageId of [theirCoverage, neighbourCoverage, 'cov_madeup0000000000']) {
      refusedWith(await bill(practice.api, visit.id, { coverageId }), 422, 'validation_failed', [
        'coverageId',
      ]);
    }
    const listed = await practice.api('GET', `/invoices?encounterId=${visit.id}`);
    assert.deepEqual(listed.body.data, []);
  });

  test('a database error while reading the coverage is a server error, not "coverageId is not one of this patient\'s coverages"', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    const coverageId = await addCoverage(practice.api, patientId, 'pln_ubuntu_classic');
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    // The request's role may not read coverages for a moment: its read of the coverage fails in the database.
    await sql`REVOKE SELECT ON coverages FROM practice_billing_app`.execute(svc.db.kysely);
    let answer: Awaited<ReturnType<typeof bill>>;
    try {
      answer = await bill(practice.api, visit.id, { coverageId });
    } finally {
      await sql`GRANT SELECT ON coverages TO practice_billing_app`.execute(svc.db.kysely);
    }
    refusedWith(answer, 500, 'internal_error');
    const listed = await practice.api('GET', `/invoices?encounterId=${visit.id}`);
    assert.deepEqual(listed.body.data, []);
    assert.equal((await bill(practice.api, visit.id, { coverageId })).status, 201);
  });
});
