// Codes are used only where their kind fits (condition codes as diagnoses, procedure codes as
// procedures and billed lines), a diagnosis is recorded once per visit, a line's service date is not
// after today in the practice's zone; the practice's practitioners and a tariff's modifiers are
// readable through the API; an address country is a real ISO 3166-1 alpha-2 code.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import {
  type Api,
  billedInvoice,
  billingPractice,
  HOUR,
  ICD10_URL,
  lineBody,
  localDate,
  newPatient,
  plusDays,
  refusedWith,
  TARIFF_URL,
} from './billing-fixtures.ts';
import {
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';

describeEachBackend('code kinds, practitioners, modifiers and countries', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
  });
  after(async () => {
    await svc.close();
  });

  const visit = (diagnoses: unknown[], procedures: unknown[], patientId: string) => {
    const end = new Date(svc.clock.now().getTime() - HOUR);
    return practice.api('POST', '/encounters', {
      body: {
        patientId,
        practitionerId: practice.practitionerId,
        start: new Date(end.getTime() - HOUR).toISOString(),
        end: end.toISOString(),
        diagnoses,
        procedures,
      },
      idempotencyKey: uniqueKey(),
    });
  };

  test('a visit refuses a procedure code as a diagnosis and a condition code as a procedure, naming each field', async () => {
    const patientId = await newPatient(practice.api);
    const wrong = await visit(
      [{ code: 'J06.9' }, { system: TARIFF_URL, code: '0190' }],
      [{ code: '0190' }, { system: ICD10_URL, code: 'I10' }],
      patientId,
    );
    refusedWith(wrong, 422, 'validation_failed', ['diagnoses.1.code', 'procedures.1.code']);
    const messages = wrong.body.errors.map((e: { message: string }) => e.message).join(' | ');
    assert.match(messages, /not a condition code/);
    assert.match(messages, /not a procedure code/);
    assert.equal((await visit([{ code: 'J06.9' }], [{ code: '0190' }], patientId)).status, 201);
  });

  test('a visit refuses the same diagnosis twice, naming the repeat', async () => {
    const patientId = await newPatient(practice.api);
    const twice = await visit(
      [{ code: 'J06.9' }, { code: 'I10' }, { system: ICD10_URL, code: 'J06.9' }],
      [{ code: '0190' }],
      patientId,
    );
    refusedWith(twice, 422, 'validation_failed', ['diagnoses.2.code']);
    assert.match(twice.body.errors[0].message, /repeats diagnoses\.0/);
  });

  test("a practice's own system is judged by its usage: a procedure system's codes cannot be diagnoses", async () => {
    const created = await practice.api('POST', '/code-systems', {
      body: { name: `Own procedures ${uniqueKey().slice(0, 8)}`, usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(created.status, 201, created.text);
    const added = await practice.api('POST', `/code-systems/${created.body.id}/concepts`, {
      body: { code: 'OWN-1', display: 'Own procedure' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.status, 201, added.text);
    const patientId = await newPatient(practice.api);
    const asDiagnosis = await visit(
      [{ system: created.body.url, code: 'OWN-1' }],
      [{ code: '0190' }],
      patientId,
    );
    refusedWith(asDiagnosis, 422, 'validation_failed', ['diagnoses.0.code']);
    const asProcedure = await visit(
      [{ code: 'J06.9' }],
      [{ system: created.body.url, code: 'OWN-1' }],
      patientId,
    );
    assert.equal(asProcedure.status, 201, asProcedure.text);
  });

  test('a line refuses a condition code as its code and a procedure code as its diagnosis', async () => {
    const invoice = await billedInvoice(svc, practice);
    const today = localDate('Africa/Johannesburg', svc.clock.now());
    const wrong = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({
        system: ICD10_URL,
        code: 'I10',
        serviceDate: today,
        diagnoses: [{ system: TARIFF_URL, code: '0191', primary: true }],
      }),
      idempotencyKey: uniqueKey(),
    });
    refusedWith(wrong, 422, 'validation_failed', ['code', 'diagnoses.0.code']);
    const lines = (await practice.api('GET', `/invoices/${invoice.id}`)).body.lineItems;
    assert.equal(lines.length, invoice.lineItems.length, 'nothing was added');
  });

  test("a line's service date after today in the practice's zone is refused; today is accepted", async () => {
    const invoice = await billedInvoice(svc, practice);
    const today = localDate('Africa/Johannesburg', svc.clock.now());
    const future = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({ serviceDate: plusDays(today, 1), serviceDateEnd: plusDays(today, 2) }),
      idempotencyKey: uniqueKey(),
    });
    refusedWith(future, 422, 'validation_failed', ['serviceDate', 'serviceDateEnd']);
    assert.match(future.body.errors[0].message, /cannot be in the future/);
    const replaced = await practice.api(
      'PUT',
      `/invoices/${invoice.id}/line-items/${invoice.lineItems[0].id}`,
      { body: lineBody({ serviceDate: plusDays(today, 3) }) },
    );
    refusedWith(replaced, 422, 'validation_failed', ['serviceDate']);
    const ok = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({ serviceDate: today }),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(ok.status, 201, ok.text);
  });

  test("the practice's practitioners are listed and read with PRACTITIONERS:READ, never another practice's", async () => {
    const second = await svc.admin('POST', `/practices/${practice.practiceId}/practitioners`, {
      name: 'Dr Second',
      registrationNumber: 'MP0123456',
      defaultSystems: { condition: ICD10_URL },
    });
    assert.equal(second.status, 201, second.text);
    const list = await practice.api('GET', '/practitioners?limit=1');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.hasMore, true);
    const next = await practice.api(
      'GET',
      `/practitioners?limit=1&cursor=${encodeURIComponent(list.body.nextCursor)}`,
    );
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(
      [...list.body.data, ...next.body.data].map((p: { id: string }) => p.id),
      [practice.practitionerId, second.body.id],
    );
    assert.equal(next.body.hasMore, false);
    const one = await practice.api('GET', `/practitioners/${second.body.id}`);
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, {
      object: 'practitioner',
      id: second.body.id,
      name: 'Dr Second',
      registrationNumber: 'MP0123456',
      defaultSystems: { condition: ICD10_URL, procedure: TARIFF_URL },
      active: true,
    });
    refusedWith(
      await practice.api(
        'GET',
        `/practitioners?limit=1&cursor=${encodeURIComponent(`${list.body.nextCursor}x`)}`,
      ),
      400,
      'invalid_cursor',
    );

    const other = await billingPractice(svc);
    refusedWith(await other.api('GET', `/practitioners/${second.body.id}`), 404, 'not_found');
    assert.deepEqual(
      (await other.api('GET', '/practitioners')).body.data.map((p: { id: string }) => p.id),
      [other.practitionerId],
    );
    const without = await billingPractice(svc, {
      permissions: PERMISSIONS.filter((p) => p !== 'PRACTITIONERS:READ'),
    });
    refusedWith(await without.api('GET', '/practitioners'), 403, 'forbidden');
  });

  test("the tariff's modifiers are listed with their percentages; ICD-10 has none", async () => {
    const systems = (await practice.api('GET', '/code-systems?owner=service')).body.data;
    const tariff = systems.find((s: { url: string }) => s.url === TARIFF_URL);
    const icd10 = systems.find((s: { url: string }) => s.url === ICD10_URL);
    const modifiers = await practice.api('GET', `/code-systems/${tariff.id}/modifiers`);
    assert.equal(modifiers.status, 200, modifiers.text);
    assert.equal(modifiers.body.hasMore, false);
    const afterHours = modifiers.body.data.find((m: { code: string }) => m.code === '0011');
    assert.equal(afterHours.object, 'modifier');
    assert.equal(afterHours.system, TARIFF_URL);
    assert.equal(afterHours.percentBasisPoints, 2500);
    assert.match(afterHours.display, /After-hours/);
    const codes = modifiers.body.data.map((m: { code: string }) => m.code);
    assert.deepEqual(codes, [...codes].sort());

    // a line with that modifier is billed 25% more
    const invoice = await billedInvoice(svc, practice);
    const today = localDate('Africa/Johannesburg', svc.clock.now());
    const added = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({ serviceDate: today, unitPrice: 10000, modifiers: ['0011'] }),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.body.lineItems.at(-1).total, 12500);

    // paged like every list: a page of two and the rest after its cursor, in code order
    const first = await practice.api('GET', `/code-systems/${tariff.id}/modifiers?limit=2`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      first.body.data.map((m: { code: string }) => m.code),
      codes.slice(0, 2),
    );
    assert.equal(first.body.hasMore, codes.length > 2);
    const rest = await practice.api(
      'GET',
      `/code-systems/${tariff.id}/modifiers?limit=100&cursor=${encodeURIComponent(first.body.nextCursor)}`,
    );
    assert.deepEqual(
      rest.body.data.map((m: { code: string }) => m.code),
      codes.slice(2),
    );
    // unknown query parameters and a cursor this list did not issue are refused like the other lists'
    refusedWith(
      await practice.api('GET', `/code-systems/${tariff.id}/modifiers?colour=red`),
      400,
      'invalid_request',
      ['colour'],
    );
    refusedWith(
      await practice.api('GET', `/code-systems/${tariff.id}/modifiers?cursor=abc`),
      400,
      'invalid_cursor',
      ['cursor'],
    );
    const otherList = (await practice.api('GET', '/code-systems?limit=1')).body.nextCursor;
    refusedWith(
      await practice.api(
        'GET',
        `/code-systems/${tariff.id}/modifiers?cursor=${encodeURIComponent(otherList)}`,
      ),
      400,
      'invalid_cursor',
      ['cursor'],
    );

    const none = await practice.api('GET', `/code-systems/${icd10.id}/modifiers`);
    assert.deepEqual(none.body, { object: 'list', data: [], hasMore: false, nextCursor: null });
    refusedWith(await practice.api('GET', '/code-systems/cs_madeup0000000000/modifiers'), 404, 'not_found');
  });

  test('an address country must be an assigned ISO 3166-1 alpha-2 code', async () => {
    const address = (country: string) => ({
      body: patientBody({ addresses: [{ lines: ['1 Long Street'], city: 'Cape Town', country }] }),
      idempotencyKey: uniqueKey(),
    });
    for (const country of ['ZZ', 'XK', 'QQ', 'za']) {
      refusedWith(await practice.api('POST', '/patients', address(country)), 422, 'validation_failed', [
        'addresses.0.country',
      ]);
    }
    for (const country of ['ZA', 'NA', 'GB']) {
      const ok = await practice.api('POST', '/patients', address(country));
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.addresses[0].country, country);
    }
  });
});
