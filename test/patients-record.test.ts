// A patient's record (GET /patients/{id}/record, POPIA s23 access): everything held about the
// patient in one streamed JSON document, read page by page as the caller takes it.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { patientRecordText } from '../src/patients/record.ts';
import { patientOf, readPatient } from '../src/patients/service.ts';
import { inPractice } from '../src/platform/db/transaction.ts';
import { addCoverage, billedInvoice, billingPractice, newPatient } from './billing-fixtures.ts';
import { addClient } from './contract-suites.ts';
import { apiClient, describeEachBackend, startService, type TestService } from './harness.ts';

const BULK_INVOICES = 999;

describeEachBackend('a patient record', (backend) => {
  let svc: TestService;
  let practice: Awaited<ReturnType<typeof billingPractice>>;
  let patientId: string;
  let otherInvoiceId: string;
  let firstInvoiceId: string;
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
    patientId = await newPatient(practice.api);
    const plans = await practice.api('GET', '/insurance-plans?limit=1');
    await addCoverage(practice.api, patientId, plans.body.data[0].id);
    firstInvoiceId = (await billedInvoice(svc, practice, { patientId, issue: true })).id;
    otherInvoiceId = (await billedInvoice(svc, practice, { issue: true })).id;
    // 999 more invoices of two lines each, written straight to the database: a long history.
    await sql`INSERT INTO invoices (practice_id, id, number, status, patient_id, date, currency,
                total_net, total_gross, updated_at)
              SELECT ${practice.practiceId}, 'inv_bulk' || lpad(n::text, 4, '0'), 'BULK-' || n, 'issued',
                ${patientId}, current_date, 'ZAR', 10000, 10000, now()
              FROM generate_series(1, ${BULK_INVOICES}) AS n`.execute(svc.db.kysely);
    await sql`INSERT INTO invoice_lines (practice_id, id, invoice_id, position, service_date, system, code,
                description, quantity, unit_price, subtotal, total)
              SELECT ${practice.practiceId}, 'li_bulk' || lpad(n::text, 4, '0') || '_' || p,
                'inv_bulk' || lpad(n::text, 4, '0'), p, current_date, 'urn:service:codesystem:tariff', '0191',
                'Consultation, established patient, moderately complex', 1, 5000, 5000, 5000
              FROM generate_series(1, ${BULK_INVOICES}) AS n, generate_series(1, 2) AS p`.execute(
      svc.db.kysely,
    );
  });
  after(async () => {
    await svc.close();
  });

  test('answers everything held about the patient, streamed, and records the request', async () => {
    const response = await fetch(`${svc.baseUrl}/api/v1/patients/${patientId}/record`, {
      headers: { authorization: `Bearer ${practice.key}` },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('transfer-encoding'), 'chunked');
    assert.equal(response.headers.get('content-length'), null);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    const requestId = response.headers.get('x-request-id');
    const record = JSON.parse(await response.text());
    assert.equal(record.object, 'patient_record');
    assert.equal(record.patient.id, patientId);
    assert.equal(record.patient.lastName, 'Dlamini');
    assert.equal(record.coverages.length, 1);
    assert.equal(record.encounters.length, 1);
    assert.ok(record.encounters[0].diagnoses.length > 0 && record.encounters[0].procedures.length > 0);
    assert.equal(record.invoices.length, BULK_INVOICES + 1);
    const ids = record.invoices.map((i: { id: string }) => i.id);
    assert.equal(new Set(ids).size, ids.length, 'each invoice once');
    assert.ok(ids.includes(firstInvoiceId));
    assert.ok(!ids.includes(otherInvoiceId), "another patient's invoice is not in the record");
    for (const invoice of record.invoices) assert.ok(invoice.lines.length >= 1, invoice.id);
    assert.equal(record.invoices.find((i: { id: string }) => i.id === 'inv_bulk0500').lines.length, 2);
    for (const section of ['claims', 'payments', 'refunds', 'notifications']) {
      assert.ok(Array.isArray(record[section]), section);
    }
    assert.ok(
      record.notifications.some((n: { subjectId: string }) => n.subjectId === firstInvoiceId),
      'the notice of the issued invoice',
    );
    const audit = record.auditEvents as Array<{ route: string; method: string; requestId: string }>;
    assert.ok(
      audit.some((e) => e.method === 'POST' && e.route === '/api/v1/patients'),
      'the registration',
    );
    assert.ok(
      audit.some((e) => e.requestId === requestId && e.route === '/api/v1/patients/:patientId/record'),
      'this access itself',
    );
  });

  test('is answered to the operator too (for the console), and that read is in the audit log', async () => {
    const response = await fetch(
      `${svc.baseUrl}/admin/v1/practices/${practice.practiceId}/patients/${patientId}/record`,
      { headers: { authorization: `Bearer ${svc.adminToken}` } },
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('transfer-encoding'), 'chunked');
    const requestId = response.headers.get('x-request-id');
    const record = JSON.parse(await response.text());
    assert.equal(record.patient.id, patientId);
    assert.equal(record.invoices.length, BULK_INVOICES + 1);
    assert.ok(
      record.auditEvents.some(
        (e: { actor: string; requestId: string; method: string }) =>
          e.actor === 'operator' && e.method === 'GET' && e.requestId === requestId,
      ),
      "the operator's read names the patient",
    );
    const unknown = await svc.admin('GET', `/practices/${practice.practiceId}/patients/pat_unknown/record`);
    assert.equal(unknown.status, 404, unknown.text);
  });

  test('is refused without PATIENTS:EXPORT, and answers 404 for a patient of another practice', async () => {
    const reader = await addClient(svc, practice.practiceId, { permissions: ['PATIENTS:READ'] });
    const refused = await apiClient(svc, reader.key)('GET', `/patients/${patientId}/record`);
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.detail, /PATIENTS:EXPORT/);
    const other = await billingPractice(svc);
    const missing = await other.api('GET', `/patients/${patientId}/record`);
    assert.equal(missing.status, 404, missing.text);
    assert.equal(missing.body.code, 'not_found');
  });

  test('is written as it is read: rows written after the first piece was taken are in the rest', async () => {
    // The document as the route sends it; taken one piece at a time, as a slow caller would.
    const patient = await inPractice(svc.db, practice.practiceId, async (trx) =>
      patientOf(await readPatient(trx, practice.practiceId, patientId)),
    );
    const stream = Readable.from(patientRecordText(svc.db, practice.practiceId, patient, svc.clock.now()), {
      objectMode: false,
    });
    const pieces = stream[Symbol.asyncIterator]();
    const first = await pieces.next();
    assert.equal(first.done, false);
    // Read while the document is being written: the read's audit row names the patient.
    const read = await practice.api('GET', `/patients/${patientId}`);
    assert.equal(read.status, 200, read.text);
    const readRequestId = read.headers.get('x-request-id');
    const chunks: Buffer[] = [Buffer.from(first.value)];
    let largestBuffered = 0;
    for (let next = await pieces.next(); !next.done; next = await pieces.next()) {
      chunks.push(Buffer.from(next.value));
      largestBuffered = Math.max(largestBuffered, stream.readableLength);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const record = JSON.parse(text);
    assert.equal(record.invoices.length, BULK_INVOICES + 1);
    assert.ok(
      record.auditEvents.some((e: { requestId: string }) => e.requestId === readRequestId),
      'the rows at the end were read after the beginning was taken',
    );
    // What waits to be taken stays far below the document: a page or so, not the whole.
    assert.ok(largestBuffered < text.length / 4, `${largestBuffered} bytes held of ${text.length}`);
  });
});
