// Invoice lines: POST /invoices/{id}/line-items (every LineItemRequest bound, the code resolved with its
// wording, pricingSource, tariff modifiers, diagnoses with one primary), PUT (full replacement) and
// DELETE of a line, each answering the whole invoice with totals recomputed, and only while the
// invoice is a draft or amending.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Api,
  billedInvoice,
  billingPractice,
  errorFields,
  ICD10_URL,
  type Json,
  lineBody,
  plusDays,
  RECENT_DAY,
  refusedWith,
  TARIFF_URL,
} from './billing-fixtures.ts';
import {
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

const WORDING_0191 = /^General practitioner consultation, new or established patient: moderately above/;

describeEachBackend('invoice lines', (backend) => {
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
  const put = (invoiceId: string, lineId: string, body: unknown) =>
    practice.api('PUT', `/invoices/${invoiceId}/line-items/${lineId}`, { body });
  const del = (invoiceId: string, lineId: string) =>
    practice.api('DELETE', `/invoices/${invoiceId}/line-items/${lineId}`);
  const draft = () => billedInvoice(svc, practice);
  const lastLine = (answer: Json) => answer.body.lineItems.at(-1);

  test('adds a line and answers the whole invoice with totals recomputed', async () => {
    const invoice = await draft();
    const answer = await add(
      invoice.id,
      lineBody({ quantity: 2.5, unitPrice: 10001, serviceDateEnd: plusDays(RECENT_DAY, 1) }),
    );
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.body.object, 'invoice');
    assert.equal(answer.body.id, invoice.id);
    assert.equal(answer.body.lineItems.length, 2);
    const line = lastLine(answer);
    assert.match(line.id, /^li_/);
    const location = answer.headers.get('location') ?? '';
    assert.ok(
      location.startsWith(`${svc.baseUrl}/api/v1/invoices/${invoice.id}/line-items/${line.id}`),
      location,
    );
    assert.deepEqual(
      { ...line, id: undefined, description: undefined },
      {
        id: undefined,
        description: undefined,
        serviceDate: RECENT_DAY,
        serviceDateEnd: plusDays(RECENT_DAY, 1),
        system: TARIFF_URL,
        code: '0191',
        modifiers: [],
        quantity: 2.5,
        unitPrice: 10001,
        subtotal: 25003, // 25002.5 rounded half away from zero
        total: 25003,
        pricingSource: null, // left out: set by hand
        diagnoses: [],
      },
    );
    assert.match(line.description, WORDING_0191, 'description defaults to the code wording');
    assert.equal(answer.body.totalNet, 55000 + 25003);
    assert.equal(answer.body.totalGross, 80003 + 12000); // 15% of 80003 = 12000.45
    assert.equal(answer.body.balanceDue, answer.body.totalGross);
    assert.ok(answer.body.updatedAt > invoice.updatedAt);
    assert.deepEqual((await practice.api('GET', `/invoices/${invoice.id}`)).body, answer.body);
  });

  test('description and pricingSource are kept when given', async () => {
    const invoice = await draft();
    const answer = await add(
      invoice.id,
      lineBody({ description: 'Long consult', pricingSource: 'medical_aid', system: TARIFF_URL }),
    );
    assert.equal(answer.status, 201, answer.text);
    assert.equal(lastLine(answer).description, 'Long consult');
    assert.equal(lastLine(answer).pricingSource, 'medical_aid');
    refusedWith(await add(invoice.id, lineBody({ pricingSource: 'bogus' })), 422, 'validation_failed', [
      'pricingSource',
    ]);
  });

  test('every bound of LineItemRequest', async () => {
    const invoice = await draft();
    const accepted: Array<Record<string, unknown>> = [
      { quantity: 10000 },
      { quantity: 0.0001 },
      { quantity: 9999.9999 },
      { unitPrice: 0 },
      { unitPrice: 1_000_000_000 },
      { serviceDateEnd: RECENT_DAY },
      { serviceDateEnd: null, description: null, modifiers: null, diagnoses: null, system: null },
    ];
    for (const change of accepted) {
      const answer = await add(invoice.id, lineBody(change));
      assert.equal(answer.status, 201, `${JSON.stringify(change)}: ${answer.text}`);
    }
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ code: 'x'.repeat(65) }, 'code'],
      [{ code: '' }, 'code'],
      [{ quantity: 10000.0001 }, 'quantity'],
      [{ quantity: 10001 }, 'quantity'],
      [{ quantity: 0 }, 'quantity'],
      [{ quantity: -1 }, 'quantity'],
      [{ quantity: 1.00001 }, 'quantity'],
      [{ quantity: '1' }, 'quantity'],
      [{ unitPrice: -1 }, 'unitPrice'],
      [{ unitPrice: 1_000_000_001 }, 'unitPrice'],
      [{ unitPrice: 10.5 }, 'unitPrice'],
      [{ serviceDate: '2024-3-01' }, 'serviceDate'],
      [{ serviceDate: '01-03-2024' }, 'serviceDate'],
      [{ serviceDate: `${RECENT_DAY}T10:00:00Z` }, 'serviceDate'],
      [{ serviceDateEnd: plusDays(RECENT_DAY, -1) }, 'serviceDateEnd'],
      [{ serviceDateEnd: '2024-3-2' }, 'serviceDateEnd'],
      [{ modifiers: ['0011', '0011'] }, 'modifiers'],
      [{ surprise: true }, 'surprise'],
    ];
    for (const [change, field] of refused) {
      const answer = await add(invoice.id, lineBody(change));
      assert.equal(answer.status, 422, `${JSON.stringify(change)}: ${answer.text}`);
      assert.equal(answer.body.code, 'validation_failed');
      assert.ok(
        errorFields(answer).includes(field),
        `${JSON.stringify(change)} names ${field}: ${answer.text}`,
      );
    }
    // a 64-character code passes the bound and is then looked up
    const long = await add(invoice.id, lineBody({ code: 'x'.repeat(64) }));
    refusedWith(long, 422, 'validation_failed', ['code']);
    assert.match(long.body.errors[0].message, /is not a code of/);
    const missing = await add(invoice.id, {});
    refusedWith(missing, 422, 'validation_failed', ['code', 'quantity', 'serviceDate', 'unitPrice']);
    assert.ok(
      missing.body.errors.every((e: Json) => e.code === 'required'),
      missing.text,
    );
    const read = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.equal(read.body.lineItems.length, 1 + accepted.length, 'refused lines were not added');
  });

  test('tariff modifiers adjust the total by their percentages', async () => {
    const invoice = await draft();
    const cases: Array<[string[], number]> = [
      [['0011'], 25000], // +25%
      [['0005'], 10000], // -50%
      [['0011', '0005'], 15000], // +25% -50%
      [['0012', '0035'], 33000], // +50% +15%
      [['0005', '0018', '0019'], 0], // -130%: never below zero
    ];
    let expectedNet = invoice.totalNet;
    for (const [modifiers, total] of cases) {
      const answer = await add(invoice.id, lineBody({ quantity: 2, unitPrice: 10000, modifiers }));
      assert.equal(answer.status, 201, answer.text);
      assert.deepEqual(lastLine(answer).modifiers, modifiers);
      assert.equal(lastLine(answer).subtotal, 20000);
      assert.equal(lastLine(answer).total, total, modifiers.join('+'));
      expectedNet += total;
      assert.equal(answer.body.totalNet, expectedNet);
    }
    const unknown = await add(invoice.id, lineBody({ modifiers: ['0011', '9999', '0005', 'ZZ'] }));
    refusedWith(unknown, 422, 'validation_failed', ['modifiers.1', 'modifiers.3']);
  });

  test('diagnoses: the one marked primary, else the first; two marked or unknown codes are refused', async () => {
    const invoice = await draft();
    const dx = (code: string, primary?: boolean) => ({
      code,
      ...(primary === undefined ? {} : { primary }),
    });
    const unmarked = await add(invoice.id, lineBody({ diagnoses: [dx('J06.9'), dx('I10')] }));
    assert.equal(unmarked.status, 201, unmarked.text);
    assert.deepEqual(
      lastLine(unmarked).diagnoses.map((d: Json) => [d.system, d.code, d.primary]),
      [
        [ICD10_URL, 'J06.9', true],
        [ICD10_URL, 'I10', false],
      ],
    );
    assert.equal(lastLine(unmarked).diagnoses[1].display, 'Essential (primary) hypertension');
    const marked = await add(invoice.id, lineBody({ diagnoses: [dx('J06.9', false), dx('I10', true)] }));
    assert.deepEqual(
      lastLine(marked).diagnoses.map((d: Json) => d.primary),
      [false, true],
    );
    refusedWith(
      await add(invoice.id, lineBody({ diagnoses: [dx('J06.9', true), dx('I10', true)] })),
      422,
      'validation_failed',
      ['diagnoses'],
    );
    refusedWith(
      await add(invoice.id, lineBody({ diagnoses: [dx('Q99.99'), { code: 'J06.9', system: 'urn:nope' }] })),
      422,
      'validation_failed',
      ['diagnoses.0.code', 'diagnoses.1.system'],
    );
  });

  test('an unknown code or system is refused, every wrong field at once', async () => {
    const invoice = await draft();
    refusedWith(await add(invoice.id, lineBody({ code: '9999' })), 422, 'validation_failed', ['code']);
    refusedWith(await add(invoice.id, lineBody({ system: 'urn:nope' })), 422, 'validation_failed', [
      'system',
    ]);
    refusedWith(
      await add(
        invoice.id,
        lineBody({ code: '9999', modifiers: ['XX'], serviceDateEnd: '2020-01-01', quantity: 1.23456 }),
      ),
      422,
      'validation_failed',
      ['code', 'modifiers.0', 'quantity', 'serviceDateEnd'],
    );
    refusedWith(await add('inv_madeup000000000000', lineBody()), 404, 'not_found');
  });

  test('PUT replaces a line entirely; DELETE removes it; both answer the invoice with new totals', async () => {
    const invoice = await draft();
    const added = await add(
      invoice.id,
      lineBody({
        description: 'Custom',
        modifiers: ['0011'],
        pricingSource: 'custom',
        diagnoses: [{ code: 'I10' }],
      }),
    );
    const line = lastLine(added);
    assert.equal(added.body.totalNet, 55000 + 12500);
    const replaced = await put(invoice.id, line.id, lineBody({ code: '0192', quantity: 3, unitPrice: 1000 }));
    assert.equal(replaced.status, 200, replaced.text);
    const after = replaced.body.lineItems.find((l: Json) => l.id === line.id);
    assert.equal(after.code, '0192');
    assert.match(after.description, /long duration or high complexity/);
    assert.deepEqual(after.modifiers, []);
    assert.equal(after.pricingSource, null);
    assert.deepEqual(after.diagnoses, []);
    assert.equal(after.total, 3000);
    assert.equal(replaced.body.lineItems.length, 2);
    assert.deepEqual(
      replaced.body.lineItems.map((l: Json) => l.id),
      added.body.lineItems.map((l: Json) => l.id),
    );
    assert.equal(replaced.body.totalNet, 58000);
    assert.equal(replaced.body.totalGross, 58000 + 8700);
    refusedWith(await put(invoice.id, line.id, lineBody({ quantity: 0 })), 422, 'validation_failed', [
      'quantity',
    ]);

    const deleted = await del(invoice.id, line.id);
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(
      deleted.body.lineItems.map((l: Json) => l.id),
      [invoice.lineItems[0].id],
    );
    assert.equal(deleted.body.totalNet, 55000);
    assert.equal(deleted.body.totalGross, 55000 + 8250);
    const last = await del(invoice.id, invoice.lineItems[0].id);
    assert.deepEqual(last.body.lineItems, []);
    assert.equal(last.body.totalNet, 0);
    assert.equal(last.body.totalGross, 0);
  });

  test('an unknown line, or a line of another invoice, is 404 for PUT and DELETE', async () => {
    const invoice = await draft();
    const other = await draft();
    for (const lineId of ['li_madeup00000000000', other.lineItems[0].id]) {
      refusedWith(await put(invoice.id, lineId, lineBody()), 404, 'not_found');
      refusedWith(await del(invoice.id, lineId), 404, 'not_found');
    }
    refusedWith(await del('inv_madeup000000000000', invoice.lineItems[0].id), 404, 'not_found');
    const read = await practice.api('GET', `/invoices/${other.id}`);
    assert.equal(read.body.lineItems.length, 1, 'the other invoice kept its line');
  });

  test('lines of an issued invoice cannot change (422 business_rule) until it is amended', async () => {
    const invoice = await billedInvoice(svc, practice, { issue: true });
    const lineId = invoice.lineItems[0].id;
    for (const answer of [
      await add(invoice.id, lineBody()),
      await put(invoice.id, lineId, lineBody()),
      await del(invoice.id, lineId),
    ]) {
      refusedWith(answer, 422, 'business_rule');
      assert.match(answer.body.detail, /issued/);
    }
    const unchanged = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.deepEqual(unchanged.body, invoice);

    const amended = await practice.api('POST', `/invoices/${invoice.id}/amend`);
    assert.equal(amended.status, 200, amended.text);
    assert.equal(amended.body.status, 'amending');
    const added = await add(invoice.id, lineBody());
    assert.equal(added.status, 201, added.text);
    const newLine = lastLine(added).id;
    assert.equal((await put(invoice.id, newLine, lineBody({ unitPrice: 5 }))).status, 200);
    const removed = await del(invoice.id, lineId);
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.body.totalNet, 5);
    const reissued = await practice.api('POST', `/invoices/${invoice.id}/issue`);
    assert.equal(reissued.status, 200, reissued.text);
    assert.equal(reissued.body.status, 'issued');
    refusedWith(await add(invoice.id, lineBody()), 422, 'business_rule');
  });
});
