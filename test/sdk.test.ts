// The client package (@practice-billing/client) driving the real service over HTTP, on both
// databases: the first session's calls typed end to end, auto-paging, typed Problems, and the
// Idempotency-Key it sends on creates, reused when an answer is lost and the call is retried.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { ConnectionError, type Invoice, ProblemError } from '@practice-billing/client';
import { pdfPages } from './accounts-fixtures.ts';
import { HOUR, MINUTE } from './billing-fixtures.ts';
import { describeEachBackend, patientBody, startService, type TestService } from './harness.ts';
import { FaultProxy, sdkClient } from './sdk-fixtures.ts';

describeEachBackend('client package against the service', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  async function visitBody(client: ReturnType<typeof sdkClient>, practitionerId: string) {
    const patient = await client.patients.create(patientBody());
    const end = new Date(svc.clock.now().getTime() - HOUR);
    return client.encounters.create({
      patientId: patient.id,
      practitionerId,
      start: new Date(end.getTime() - 20 * MINUTE).toISOString(),
      end: end.toISOString(),
      diagnoses: [{ code: 'J06.9' }],
      procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
    });
  }

  test('a patient, a coverage, a visit, a bill with its claim, and the claim read back', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const patient = await client.patients.create(
      patientBody({ givenNames: ['Lerato'], lastName: 'Dlamini' }),
    );
    assert.match(patient.id, /^pat_/);
    assert.equal(patient.object, 'patient');
    assert.deepEqual((await client.patients.get(patient.id)).givenNames, ['Lerato']);
    const found = await client.patients
      .find({ externalSystem: patient.externalId!.system, externalId: patient.externalId!.value })
      .toArray();
    assert.deepEqual(
      found.map((p) => p.id),
      [patient.id],
    );

    const [plan] = await client.insurancePlans.list({ name: 'Ubuntu Essential' }).toArray(1);
    assert.ok(plan, 'the catalogue has Ubuntu Essential');
    const coverage = await client.coverages.create(patient.id, {
      planId: plan.id,
      memberNumber: 'UH1234567',
    });
    assert.equal((await client.coverages.get(patient.id, coverage.id)).planId, plan.id);

    const end = new Date(svc.clock.now().getTime() - HOUR);
    const encounter = await client.encounters.create({
      patientId: patient.id,
      practitionerId: practice.practitionerId,
      start: new Date(end.getTime() - 20 * MINUTE).toISOString(),
      end: end.toISOString(),
      diagnoses: [{ code: 'J06.9' }],
      procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
    });
    const billed = await client.encounters.bill(encounter.id, { issue: true, submitClaim: true });
    assert.equal(billed.issued, true);
    assert.equal(billed.claimQueued, true, billed.claimSkippedReason ?? '');
    assert.equal(billed.invoice.status, 'issued');
    assert.equal((await client.claims.get(billed.invoice.id)).outcome, 'queued');
    await svc.worker.drain();
    const claim = await client.claims.get(billed.invoice.id);
    assert.equal(claim.status, 'accepted');
    assert.equal(claim.items[0]?.decision, 'approved');
    assert.equal((await client.invoices.get(billed.invoice.id)).claimStatus, 'accepted');
  });

  test('practitioners, modifiers and cancelling an invoice have methods of their own', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const practitioners = await client.practitioners.list().toArray();
    assert.deepEqual(
      practitioners.map((p) => p.id),
      [practice.practitionerId],
    );
    const one = await client.practitioners.get(practice.practitionerId);
    assert.equal(one.id, practice.practitionerId);

    const services = await client.codeSystems.list({ owner: 'service' }).toArray();
    const tariff = services.find((s) => (s as { url: string }).url.includes('tariff'));
    assert.ok(tariff, services.map((s) => (s as { url: string }).url).join(', '));
    const modifiers = await client.codeSystems.modifiers(tariff.id).toArray();
    assert.ok(modifiers.some((m) => m.code === '0011'));

    const encounter = await visitBody(client, practice.practitionerId);
    const billed = await client.encounters.bill(encounter.id, { issue: false });
    const cancelled = await client.invoices.cancel(billed.invoice.id, { reason: 'Billed twice' });
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await client.invoices.get(billed.invoice.id)).status, 'cancelled');
  });

  test('a payment and a refund recorded through the client, read back, and a refusal naming the amount', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const encounter = await visitBody(client, practice.practitionerId);
    const { invoice } = await client.encounters.bill(encounter.id, { issue: true });
    const key = `sdk-pay-${randomBytes(4).toString('hex')}`;
    const payment = await client.invoices.recordPayment(
      invoice.id,
      { amount: invoice.totalGross, method: 'card', reference: 'slip 7' },
      { idempotencyKey: key },
    );
    assert.equal(payment.object, 'payment');
    const again = await client.invoices.recordPayment(
      invoice.id,
      { amount: invoice.totalGross, method: 'card', reference: 'slip 7' },
      { idempotencyKey: key },
    );
    assert.equal(again.id, payment.id, 'the same key replays the payment');
    assert.deepEqual(await client.invoices.getPayment(invoice.id, payment.id), payment);
    assert.equal((await client.invoices.get(invoice.id)).status, 'balanced');

    const refund = await client.invoices.recordRefund(invoice.id, {
      amount: 1000,
      method: 'card',
      reason: 'Charged twice',
    });
    assert.equal(refund.object, 'refund');
    assert.deepEqual(await client.invoices.getRefund(invoice.id, refund.id), refund);
    assert.deepEqual(
      (await client.invoices.refunds(invoice.id).toArray()).map((r) => r.id),
      [refund.id],
    );
    const after = await client.invoices.get(invoice.id);
    assert.equal(after.status, 'partially_paid');
    assert.equal(after.balanceDue, 1000);

    const refused = await client.invoices
      .recordRefund(invoice.id, { amount: invoice.totalGross, method: 'card', reason: 'Too much' })
      .then(
        () => assert.fail('an over-refund is refused'),
        (error: unknown) => error,
      );
    assert.ok(refused instanceof ProblemError);
    assert.equal(refused.status, 422);
    assert.deepEqual(
      refused.errors.map((e) => e.field),
      ['amount'],
    );
  });

  test("invoices.document answers the issued invoice's account as PDF bytes; a draft is a ProblemError", async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const encounter = await visitBody(client, practice.practitionerId);
    const { invoice } = await client.encounters.bill(encounter.id, { issue: true });
    const bytes = await client.invoices.document(invoice.id);
    assert.ok(bytes instanceof Uint8Array);
    assert.equal(Buffer.from(bytes.subarray(0, 5)).toString('latin1'), '%PDF-');
    const text = (await pdfPages(bytes)).join('\n');
    assert.ok(text.includes(invoice.number), text);
    const draft = await client.encounters.bill((await visitBody(client, practice.practitionerId)).id);
    await assert.rejects(client.invoices.document(draft.invoice.id), (error: unknown) => {
      assert.ok(error instanceof ProblemError);
      assert.equal(error.status, 422);
      return true;
    });
  });

  test('for await walks every page of invoices.list, oldest change first, with the filters kept', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const made: Invoice[] = [];
    for (let i = 0; i < 5; i++) {
      const visit = await visitBody(client, practice.practitionerId);
      made.push((await client.encounters.bill(visit.id)).invoice);
    }
    const since = made[0]!.updatedAt;
    // A change feed lists a commit once its safe high-water mark has passed it: wait for the last.
    for (let i = 0; i < 500; i++) {
      if ((await client.invoices.list({ updatedSince: since }).toArray()).length >= 4) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seen: string[] = [];
    for await (const invoice of client.invoices.list({ updatedSince: since, limit: 2 }))
      seen.push(invoice.id);
    assert.deepEqual(
      seen,
      made.slice(1).map((i) => i.id),
    );
    const pages = [];
    for await (const page of client.invoices.list({ limit: 2 }).pages()) pages.push(page.data.length);
    assert.deepEqual(pages, [2, 2, 1]);
    const first = await client.invoices.list({ limit: 2 }).page();
    assert.equal(first.hasMore, true);
    const second = await client.invoices.list({ limit: 2 }).page(first.nextCursor!);
    assert.deepEqual(
      second.data.map((i) => i.id),
      made.slice(2, 4).map((i) => i.id),
    );
  });

  test('error answers are ProblemErrors with code, status, detail, errors and requestId, not retried', async () => {
    const practice = await svc.newPractice();
    const proxy = await FaultProxy.start(svc.baseUrl);
    try {
      const client = sdkClient(proxy.baseUrl, practice.key);
      const refused = await client.patients
        .create({ givenNames: [], lastName: 'x', birthDate: '2024-02-30' })
        .then(
          () => assert.fail('created'),
          (error: unknown) => error,
        );
      assert.ok(refused instanceof ProblemError);
      assert.equal(refused.status, 422);
      assert.equal(refused.code, 'validation_failed');
      assert.deepEqual(refused.errors.map((e) => e.field).sort(), ['birthDate', 'givenNames']);
      assert.match(refused.requestId ?? '', /^req_/);
      assert.ok(refused.detail.length > 0);
      const missing = await client.invoices.get('inv_doesnotexist00000000').catch((e: unknown) => e);
      assert.ok(missing instanceof ProblemError);
      assert.equal(missing.status, 404);
      assert.equal(missing.code, 'not_found');
      const person = patientBody();
      await client.patients.create(person);
      const duplicate = await client.patients.create(person).catch((e: unknown) => e);
      assert.ok(duplicate instanceof ProblemError);
      assert.equal(duplicate.code, 'duplicate');
      // one attempt each: 422, 404 and 409 duplicate are the service's decision
      assert.deepEqual(
        proxy.seen.map((s) => s.status),
        [422, 404, 201, 409],
      );
      const wrongKey = sdkClient(proxy.baseUrl, 'pbk_nope_nope');
      const unauthenticated = await wrongKey.invoices.get('inv_x').catch((e: unknown) => e);
      assert.ok(unauthenticated instanceof ProblemError);
      assert.equal(unauthenticated.code, 'unauthenticated');
      assert.equal(proxy.seen.length, 5);
    } finally {
      await proxy.close();
    }
  });

  test('a create sends a fresh Idempotency-Key per call and the same one on a retry after a lost answer', async () => {
    const practice = await svc.newPractice();
    const proxy = await FaultProxy.start(svc.baseUrl);
    try {
      const client = sdkClient(proxy.baseUrl, practice.key);
      proxy.plan = ({ n }) => (n === 1 ? 'lose-answer' : 'forward');
      const person = patientBody();
      const patient = await client.patients.create(person);
      assert.equal(proxy.seen.length, 2);
      const [lost, retry] = proxy.seen;
      assert.equal(lost!.action, 'lose-answer');
      assert.ok(lost!.idempotencyKey);
      assert.equal(retry!.idempotencyKey, lost!.idempotencyKey);
      assert.equal(retry!.status, 201);
      // the service made one patient: the retry was answered with the first one's replay
      const found = await client.patients
        .find({ externalSystem: person.externalId.system, externalId: person.externalId.value })
        .toArray();
      assert.deepEqual(
        found.map((p) => p.id),
        [patient.id],
      );

      await client.patients.create(patientBody());
      assert.notEqual(proxy.seen.at(-1)!.idempotencyKey, lost!.idempotencyKey);

      // an explicit key: the second call is the first one's replay
      const key = `mine-${randomBytes(4).toString('hex')}`;
      const body = patientBody();
      const first = await client.patients.create(body, { idempotencyKey: key });
      const again = await client.patients.create(body, { idempotencyKey: key });
      assert.equal(again.id, first.id);
      assert.equal(proxy.seen.at(-1)!.idempotencyKey, key);
      // two calls racing with one key: both get the same patient (a 409 conflict is waited out)
      const racing = patientBody();
      const raceKey = `race-${randomBytes(4).toString('hex')}`;
      const [a, b] = await Promise.all([
        client.patients.create(racing, { idempotencyKey: raceKey }),
        client.patients.create(racing, { idempotencyKey: raceKey }),
      ]);
      assert.equal(a.id, b.id);
    } finally {
      await proxy.close();
    }
  });

  test('sending a claim carries an Idempotency-Key: after a lost answer the retry replays it, one claim sent', async () => {
    const practice = await svc.newPractice();
    const direct = sdkClient(svc.baseUrl, practice.key);
    const visit = await visitBody(direct, practice.practitionerId);
    const [plan] = await direct.insurancePlans.list({ name: 'Ubuntu Essential' }).toArray(1);
    assert.ok(plan);
    await direct.coverages.create(visit.patientId, { planId: plan.id, memberNumber: 'UH7654321' });
    const invoice = (await direct.encounters.bill(visit.id, { issue: true })).invoice;
    const proxy = await FaultProxy.start(svc.baseUrl);
    try {
      const client = sdkClient(proxy.baseUrl, practice.key);
      proxy.plan = ({ n }) => (n === 1 ? 'lose-answer' : 'forward');
      const claim = await client.claims.send(invoice.id);
      assert.equal(claim.status, 'submitting');
      const [lost, retry] = proxy.seen;
      assert.equal(lost!.action, 'lose-answer');
      assert.ok(lost!.idempotencyKey, 'the claim was sent with a key');
      assert.equal(retry!.idempotencyKey, lost!.idempotencyKey);
      assert.equal(retry!.status, 202, 'the replay of the first answer, not 409 for a claim already sent');
      assert.equal(proxy.seen.length, 2);
      await svc.worker.drain();
      assert.equal((await direct.claims.get(invoice.id)).status, 'accepted');
    } finally {
      await proxy.close();
    }
  });

  test('a state change without an Idempotency-Key is not sent again after a lost answer', async () => {
    const practice = await svc.newPractice();
    const direct = sdkClient(svc.baseUrl, practice.key);
    const visit = await visitBody(direct, practice.practitionerId);
    const invoice = (await direct.encounters.bill(visit.id)).invoice;
    const proxy = await FaultProxy.start(svc.baseUrl);
    try {
      const client = sdkClient(proxy.baseUrl, practice.key);
      proxy.plan = () => 'lose-answer';
      const lost = await client.invoices.issue(invoice.id).catch((e: unknown) => e);
      assert.ok(lost instanceof ConnectionError, String(lost));
      assert.equal(proxy.seen.length, 1);
      // the issue did happen: reading is safe to retry and tells
      proxy.plan = ({ n }) => (n === 2 ? 'reset' : 'forward');
      assert.equal((await client.invoices.get(invoice.id)).status, 'issued');
      assert.deepEqual(
        proxy.seen.map((s) => s.action),
        ['lose-answer', 'reset', 'forward'],
      );
    } finally {
      await proxy.close();
    }
  });
});
