// Location headers: every creating operation answers the absolute address of what it created, and a
// GET of that address with the same key answers that record; a claim sent (202) names where to follow
// it; the operator API's creates do the same where the record has an address of its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  type Api,
  addCoverage,
  billedInvoice,
  billingPractice,
  lineBody,
  newPatient,
  newVisit,
} from './billing-fixtures.ts';
import {
  type Answer,
  call,
  describeEachBackend,
  startService,
  type TestService,
  uniqueKey,
} from './harness.ts';

describeEachBackend('Location headers', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  /** The Location of `created` is absolute, under the service, and reads back as `expected`. */
  async function readsBack(api: Api, created: Answer, expected: unknown, what: string): Promise<void> {
    const location = created.headers.get('location');
    assert.ok(location, `${what}: Location`);
    const prefix = `${svc.deps.config.publicBaseUrl}/api/v1`;
    assert.ok(location.startsWith(prefix), `${what}: ${location} is absolute under ${prefix}`);
    const read = await api('GET', location.slice(prefix.length));
    assert.equal(read.status, 200, `${what}: GET ${location}: ${read.text}`);
    assert.deepEqual(read.body, expected, `${what}: GET ${location}`);
  }

  test('every public create answers the address of the record it made', async () => {
    const practice = await billingPractice(svc);
    const { api } = practice;

    const patient = await api('POST', '/patients', {
      body: { givenNames: ['Ayanda'], lastName: 'Zulu', birthDate: '1980-05-05' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(patient.status, 201, patient.text);
    await readsBack(api, patient, patient.body, 'patient');

    const coverage = await api('POST', `/patients/${patient.body.id}/coverages`, {
      body: { planId: 'pln_ubuntu_essential', memberNumber: `M${randomBytes(3).toString('hex')}` },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(coverage.status, 201, coverage.text);
    await readsBack(api, coverage, coverage.body, 'coverage');

    const system = await api('POST', '/code-systems', {
      body: { name: `Own ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(system.status, 201, system.text);
    await readsBack(api, system, system.body, 'code system');
    const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
      body: { code: 'X1', display: 'Own code' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(concept.status, 201, concept.text);
    await readsBack(api, concept, concept.body, 'code');

    const visit = await api('POST', '/encounters', {
      body: {
        patientId: patient.body.id,
        practitionerId: practice.practitionerId,
        start: new Date(svc.clock.now().getTime() - 2 * 3_600_000).toISOString(),
        end: new Date(svc.clock.now().getTime() - 3_600_000).toISOString(),
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190', diagnosisCodes: ['J06.9'] }],
      },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(visit.status, 201, visit.text);
    await readsBack(api, visit, visit.body, 'encounter');

    const billed = await api('POST', `/encounters/${visit.body.id}/bill`, { idempotencyKey: uniqueKey() });
    assert.equal(billed.status, 201, billed.text);
    await readsBack(api, billed, billed.body.invoice, 'invoice of a bill');

    const line = await api('POST', `/invoices/${billed.body.invoice.id}/line-items`, {
      body: lineBody(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(line.status, 201, line.text);
    const added = line.body.lineItems.find(
      (l: { id: string }) => !billed.body.invoice.lineItems.some((b: { id: string }) => b.id === l.id),
    );
    assert.ok(added, 'the new line is on the invoice');
    // Read alone, the line says what it is.
    await readsBack(api, line, { object: 'line_item', ...added }, 'line');
  });

  test('a claim sent or resubmitted names where to follow it', async () => {
    const practice = await billingPractice(svc);
    const patientId = await newPatient(practice.api);
    await addCoverage(practice.api, patientId, 'pln_ubuntu_essential');
    const invoice = await billedInvoice(svc, practice, { issue: true, patientId });
    const sent = await practice.api('POST', `/invoices/${invoice.id}/claim`, {});
    assert.equal(sent.status, 202, sent.text);
    assert.equal(
      sent.headers.get('location'),
      `${svc.deps.config.publicBaseUrl}/api/v1/invoices/${invoice.id}/claim`,
    );
    const followed = await practice.api('GET', `/invoices/${invoice.id}/claim`);
    assert.equal(followed.status, 200, followed.text);
    assert.equal(followed.body.id, sent.body.id);
  });

  test('a coverage, line or code read through another parent is not found', async () => {
    const practice = await billingPractice(svc);
    const first = await newPatient(practice.api);
    const second = await newPatient(practice.api);
    const coverageId = await addCoverage(practice.api, first, 'pln_ubuntu_essential');
    const elsewhere = await practice.api('GET', `/patients/${second}/coverages/${coverageId}`);
    assert.equal(elsewhere.status, 404, elsewhere.text);
    assert.equal(elsewhere.body.code, 'not_found');

    const visit = await newVisit(svc, practice.api, practice.practitionerId, first);
    const one = await billedInvoice(svc, practice, { patientId: first });
    const other = await practice.api('POST', `/encounters/${visit.id}/bill`, {
      idempotencyKey: uniqueKey(),
    });
    assert.equal(other.status, 201, other.text);
    const lineId = one.lineItems[0].id as string;
    const crossed = await practice.api('GET', `/invoices/${other.body.invoice.id}/line-items/${lineId}`);
    assert.equal(crossed.status, 404, crossed.text);
  });

  test('operator creates answer the address of a practice, a client and a webhook endpoint', async () => {
    const admin = (method: string, path: string, body?: unknown) =>
      call(svc.baseUrl, method, path, {
        token: svc.adminToken,
        ...(body !== undefined ? { body } : {}),
      });
    const readAdmin = async (created: Answer, what: string) => {
      const location = created.headers.get('location');
      assert.ok(location?.startsWith(`${svc.deps.config.publicBaseUrl}/admin/v1/`), `${what}: ${location}`);
      if (!location) return;
      const read = await admin('GET', location.slice(svc.deps.config.publicBaseUrl.length));
      assert.equal(read.status, 200, `${what}: ${read.text}`);
      assert.equal(read.body.id, created.body.id, what);
    };
    const practice = await admin('POST', '/admin/v1/practices', { name: 'Located Practice' });
    assert.equal(practice.status, 201, practice.text);
    await readAdmin(practice, 'practice');
    const client = await admin('POST', `/admin/v1/practices/${practice.body.id}/clients`, {
      name: 'Located client',
      permissions: ['PATIENTS:READ'],
    });
    assert.equal(client.status, 201, client.text);
    await readAdmin(client, 'client');
    const endpoint = await admin('POST', `/admin/v1/practices/${practice.body.id}/webhook-endpoints`, {
      url: 'http://127.0.0.1:9/hook',
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    await readAdmin(endpoint, 'webhook endpoint');
  });
});
