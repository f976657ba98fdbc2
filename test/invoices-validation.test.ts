// Field rules an invoice shares with the rest of the API: no total past the contract's largest amount,
// a line's diagnoses each once and its service date within what a visit allows, and one date-time rule
// for every date-time a request sends (seconds optional, a real date from year 0001).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertLine } from '../src/invoices/store.ts';
import { newId } from '../src/platform/ids.ts';
import {
  type Api,
  asOps,
  billedInvoice,
  billingPractice,
  lineBody,
  plusDays,
  refusedWith,
} from './billing-fixtures.ts';
import {
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const MAX_AMOUNT = 9007199254740991;

describeEachBackend('invoice field rules', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc, { vatRateBasisPoints: 1500 });
  });
  after(async () => {
    await svc.close();
  });

  const add = (invoiceId: string, body: unknown) =>
    practice.api('POST', `/invoices/${invoiceId}/line-items`, { body, idempotencyKey: uniqueKey() });
  const read = async (invoiceId: string) => (await practice.api('GET', `/invoices/${invoiceId}`)).body;

  test('a line that would take a total past the largest amount is 422 naming unitPrice; nothing changes', async () => {
    const invoice = await billedInvoice(svc, practice);
    // A line whose total is already near the bound, as a thousand lines at the largest price and
    // quantity would make it (written directly: their requests would take long).
    const near = Math.floor(MAX_AMOUNT / 1.15) - 100_000;
    await asOps(svc, (trx) =>
      insertLine(trx, {
        practice_id: practice.practiceId,
        id: newId('lineItem'),
        invoice_id: invoice.id,
        position: 99,
        procedure_id: null,
        service_date: invoice.lineItems[0].serviceDate,
        service_date_end: null,
        system: invoice.lineItems[0].system,
        code: invoice.lineItems[0].code,
        description: 'Near the bound',
        quantity: 1,
        unit_price: 1_000_000_000,
        subtotal: near,
        total: near,
        pricing_source: null,
      }),
    );
    const before = await read(invoice.id);
    // Net stays below the bound; with 15% VAT the gross would not.
    const refused = await add(invoice.id, lineBody({ quantity: 10000, unitPrice: 1_000_000_000 }));
    refusedWith(refused, 422, 'validation_failed', ['unitPrice']);
    assert.match(refused.body.errors[0].message, /totalGross .* above the largest amount 9007199254740991/);
    assert.deepEqual(await read(invoice.id), before, 'nothing changed');
    const fits = await add(invoice.id, lineBody({ unitPrice: 100 }));
    assert.equal(fits.status, 201, fits.text);
    assert.ok(fits.body.totalGross <= MAX_AMOUNT);
  });

  test('a line names each diagnosis once, as a visit does', async () => {
    const invoice = await billedInvoice(svc, practice);
    const refused = await add(
      invoice.id,
      lineBody({ diagnoses: [{ code: 'J06.9' }, { code: 'I10' }, { code: 'J06.9', primary: true }] }),
    );
    refusedWith(refused, 422, 'validation_failed', ['diagnoses.2.code']);
    assert.match(
      refused.body.errors[0].message,
      /repeats diagnoses\.0: a diagnosis is recorded once per line/,
    );
    const line = invoice.lineItems[0];
    const replaced = await practice.api('PUT', `/invoices/${invoice.id}/line-items/${line.id}`, {
      body: lineBody({ diagnoses: [{ code: 'I10' }, { code: 'I10' }] }),
    });
    refusedWith(replaced, 422, 'validation_failed', ['diagnoses.1.code']);
    assert.equal(
      (await add(invoice.id, lineBody({ diagnoses: [{ code: 'J06.9' }, { code: 'I10' }] }))).status,
      201,
    );
  });

  test("a service date more than 120 days before the invoice's date is refused, as a visit's start is", async () => {
    const invoice = await billedInvoice(svc, practice);
    for (const serviceDate of ['1900-01-01', plusDays(invoice.date, -121)]) {
      const refused = await add(invoice.id, lineBody({ serviceDate }));
      refusedWith(refused, 422, 'validation_failed', ['serviceDate']);
      assert.match(refused.body.errors[0].message, /more than 120 days before the invoice's date/);
    }
    const oldest = await add(invoice.id, lineBody({ serviceDate: plusDays(invoice.date, -120) }));
    assert.equal(oldest.status, 201, oldest.text);
  });

  test('a date-time in year 0000 is refused as any wrong date-time: 400 in a query, 422 in a body', async () => {
    for (const path of [
      '/invoices?updatedSince=0000-01-01T00:00:00Z',
      '/events?createdSince=0000-12-31T23:59:59Z',
    ]) {
      const answer = await practice.api('GET', path);
      refusedWith(answer, 400, 'invalid_request', [path.split('?')[1]!.split('=')[0]!]);
    }
    const start = await practice.api('POST', '/encounters', {
      idempotencyKey: uniqueKey(),
      body: {
        patientId: 'pat_x',
        practitionerId: practice.practitionerId,
        start: '0000-01-01T10:00:00Z',
        end: '0000-01-01T11:00:00Z',
        diagnoses: [{ code: 'J06.9' }],
        procedures: [{ code: '0190' }],
      },
    });
    assert.equal(start.status, 422, start.text);
    assert.ok(
      start.body.errors.some((e: { field: string }) => e.field === 'start'),
      start.text,
    );
    const audit = await svc.admin(
      'GET',
      `/practices/${practice.practiceId}/audit-events?since=${encodeURIComponent('0000-01-01T00:00:00Z')}`,
    );
    refusedWith(audit, 400, 'invalid_request', ['since']);
    const first = await practice.api(
      'GET',
      `/invoices?updatedSince=${encodeURIComponent('0001-01-01T00:00:00Z')}`,
    );
    assert.equal(first.status, 200, first.text);
  });

  test('updatedSince takes a time without seconds, as a visit does, with Z or an offset', async () => {
    const invoice = await billedInvoice(svc, practice);
    const before = new Date(Date.parse(invoice.updatedAt) - 120_000);
    const minute = before.toISOString().slice(0, 16);
    for (const since of [
      `${minute}Z`,
      `${minute.slice(0, 11)}${String((before.getUTCHours() + 2) % 24).padStart(2, '0')}${minute.slice(13)}+02:00`,
    ]) {
      const answer = await practice.api('GET', `/invoices?updatedSince=${encodeURIComponent(since)}`);
      assert.equal(answer.status, 200, `${since}: ${answer.text}`);
      assert.ok(
        answer.body.data.some((i: { id: string }) => i.id === invoice.id),
        `${since} lists the invoice changed after it`,
      );
    }
    const events = await practice.api('GET', `/events?createdSince=${encodeURIComponent(`${minute}Z`)}`);
    assert.equal(events.status, 200, events.text);
    for (const wrong of ['2024-02-30T10:00Z', '2024-01-01T10:00', '2024-01-01T24:00Z']) {
      refusedWith(
        await practice.api('GET', `/invoices?updatedSince=${encodeURIComponent(wrong)}`),
        400,
        'invalid_request',
        ['updatedSince'],
      );
    }
  });
});
