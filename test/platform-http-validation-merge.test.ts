// One 422 names every wrong field: the fields the route's schema refuses and those the service's own
// rules refuse (unknown patients, codes and plans, future dates, names that cannot change) come in
// one answer, in the order the request declares its fields. A field the schema refused is not judged
// again, nothing is written, and the answer is not kept for the Idempotency-Key.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  type Api,
  billedInvoice,
  billingPractice,
  ICD10_URL,
  lineBody,
  plusDays,
  RECENT_DAY,
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
import { refusedWith } from './support/refusals.ts';

const HOUR = 60 * 60 * 1000;

/** The wrong fields as answered, in the answer's order. */
describeEachBackend('every wrong field in one answer', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  let patientId: string;
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
    const made = await practice.api('POST', '/patients', {
      body: patientBody(),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(made.status, 201, made.text);
    patientId = made.body.id;
  });
  after(async () => {
    await svc.close();
  });

  function visit(overrides: Record<string, unknown> = {}) {
    const end = svc.clock.now().getTime() - HOUR;
    return {
      patientId,
      practitionerId: practice.practitionerId,
      start: new Date(end - HOUR / 2).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses: [{ system: ICD10_URL, code: 'J06.9' }],
      procedures: [{ system: TARIFF_URL, code: '0190', diagnosisCodes: ['J06.9'] }],
      ...overrides,
    };
  }

  const encounterCount = async () => {
    const list = await practice.api('GET', `/encounters?patientId=${patientId}&limit=100`);
    assert.equal(list.status, 200, list.text);
    return list.body.data.length as number;
  };

  test('POST /encounters: an unknown patient and a note that is no string, together', async () => {
    const before = await encounterCount();
    const body = visit({
      patientId: 'pat_nope',
      procedures: [{ system: TARIFF_URL, code: '0190', diagnosisCodes: ['J06.9'], note: 5 }],
    });
    const key = uniqueKey();
    const answer = await practice.api('POST', '/encounters', { body, idempotencyKey: key });
    refusedWith(answer, 422, 'validation_failed', ['patientId', 'procedures.0.note'], { inOrder: true });
    assert.equal(await encounterCount(), before, 'nothing recorded');

    // Not kept for the key: the corrected request under the same key runs afresh.
    const fixed = await practice.api('POST', '/encounters', { body: visit(), idempotencyKey: key });
    assert.equal(fixed.status, 201, fixed.text);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);
  });

  test('POST /encounters: rule errors of several kinds come in the order the request declares its fields', async () => {
    const answer = await practice.api('POST', '/encounters', {
      idempotencyKey: uniqueKey(),
      body: visit({
        practitionerId: 'prac_nope',
        end: 'yesterday',
        diagnoses: [
          { system: ICD10_URL, code: 'NOPE.1' },
          { system: ICD10_URL, code: 'J06.9', extra: true },
        ],
        procedures: [{ system: TARIFF_URL, code: '0190', diagnosisCodes: ['J06.9', 'Z99.9'] }],
      }),
    });
    refusedWith(
      answer,
      422,
      'validation_failed',
      ['practitionerId', 'end', 'diagnoses.0.code', 'diagnoses.1.extra', 'procedures.0.diagnosisCodes.1'],
      { inOrder: true },
    );
  });

  test('a field the schema refused is not judged again, nor what depends on it', async () => {
    const wrongSystem = await practice.api('POST', '/encounters', {
      idempotencyKey: uniqueKey(),
      body: visit({
        patientId: 'pat_nope',
        diagnoses: [{ system: 5, code: 'J06.9' }],
        procedures: [{ system: TARIFF_URL, code: '0190', diagnosisCodes: ['J06.9'] }],
      }),
    });
    // No "diagnoses.0.code is not a code of" the default system, no complaint about diagnosisCodes.
    refusedWith(wrongSystem, 422, 'validation_failed', ['patientId', 'diagnoses.0.system'], {
      inOrder: true,
    });

    const tooLong = await practice.api('POST', '/encounters', {
      idempotencyKey: uniqueKey(),
      body: visit({ patientId: 'x'.repeat(101), start: 'not a time' }),
    });
    assert.deepEqual(
      (tooLong.body.errors as Array<{ field: string; message: string }>).map((e) => e.message),
      [
        'patientId must NOT have more than 100 characters',
        'start is not a real date and time with an offset (YYYY-MM-DDThh:mm[:ss]Z or ±hh:mm)',
      ],
      tooLong.text,
    );
  });

  test('a wrong field of the rules alone is still answered and kept for the key', async () => {
    const key = uniqueKey();
    const body = visit({ patientId: 'pat_nope' });
    const first = await practice.api('POST', '/encounters', { body, idempotencyKey: key });
    refusedWith(first, 422, 'validation_failed', ['patientId'], { inOrder: true });
    const again = await practice.api('POST', '/encounters', { body, idempotencyKey: key });
    refusedWith(again, 422, 'validation_failed', ['patientId'], { inOrder: true });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });

  test('POST and PUT line items: an unknown code and a negative price, together', async () => {
    const invoice = await billedInvoice(svc, practice, { patientId });
    const key = uniqueKey();
    const added = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody({ code: 'NOPE', unitPrice: -5 }),
      idempotencyKey: key,
    });
    refusedWith(added, 422, 'validation_failed', ['code', 'unitPrice'], { inOrder: true });
    const line = invoice.lineItems[0];
    const replaced = await practice.api('PUT', `/invoices/${invoice.id}/line-items/${line.id}`, {
      body: lineBody({ code: 'NOPE', unitPrice: -5, diagnoses: [{ code: 'NOPE.9' }] }),
    });
    refusedWith(replaced, 422, 'validation_failed', ['code', 'unitPrice', 'diagnoses.0.code'], {
      inOrder: true,
    });
    const wrongSystem = await practice.api('PUT', `/invoices/${invoice.id}/line-items/${line.id}`, {
      body: lineBody({
        system: ['x'],
        code: 'NOPE',
        serviceDate: RECENT_DAY,
        serviceDateEnd: plusDays(RECENT_DAY, -4),
      }),
    });
    refusedWith(wrongSystem, 422, 'validation_failed', ['system', 'serviceDateEnd'], { inOrder: true });

    const unchanged = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.deepEqual(unchanged.body.lineItems, invoice.lineItems, 'no line added or changed');
    const fixed = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
      body: lineBody(),
      idempotencyKey: key,
    });
    assert.equal(fixed.status, 201, fixed.text);
  });

  test('POST /patients: a future birth date and a wrong last name, together', async () => {
    const answer = await practice.api('POST', '/patients', {
      body: patientBody({ lastName: 5, birthDate: '2100-01-01' }),
      idempotencyKey: uniqueKey(),
    });
    refusedWith(answer, 422, 'validation_failed', ['lastName', 'birthDate'], { inOrder: true });
  });

  test('PATCH /patients/{id}: a future birth date and an unknown field, together; the patient stays', async () => {
    const before = await practice.api('GET', `/patients/${patientId}`);
    const answer = await practice.api('PATCH', `/patients/${patientId}`, {
      body: { birthDate: '2100-01-01', nickname: 'Lee' },
    });
    refusedWith(answer, 422, 'validation_failed', ['birthDate', 'nickname'], { inOrder: true });
    const removesRequired = await practice.api('PATCH', `/patients/${patientId}`, {
      body: { lastName: null, gender: 'dragon' },
    });
    refusedWith(removesRequired, 422, 'validation_failed', ['lastName', 'gender'], { inOrder: true });
    const after = await practice.api('GET', `/patients/${patientId}`);
    assert.deepEqual(after.body, before.body);
  });

  test('POST /patients/{id}/coverages: an unknown plan and a missing member number, together', async () => {
    const answer = await practice.api('POST', `/patients/${patientId}/coverages`, {
      body: { planId: 'plan_nope', startDate: '2024-05-01', endDate: '2024-04-01' },
      idempotencyKey: uniqueKey(),
    });
    refusedWith(answer, 422, 'validation_failed', ['planId', 'memberNumber', 'endDate'], { inOrder: true });
  });

  test('code systems: a name without letters or one that changes, with a wrong usage, together', async () => {
    const created = await practice.api('POST', '/code-systems', {
      body: { name: '!!!', usage: ['nonsense'] },
      idempotencyKey: uniqueKey(),
    });
    refusedWith(created, 422, 'validation_failed', ['name', 'usage.0'], { inOrder: true });
    const name = `Own ${randomBytes(4).toString('hex')}`;
    const own = await practice.api('POST', '/code-systems', {
      body: { name, usage: ['procedure'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(own.status, 201, own.text);
    const replaced = await practice.api('PUT', `/code-systems/${own.body.id}`, {
      body: { name: `${name} renamed`, usage: [] },
    });
    refusedWith(replaced, 422, 'validation_failed', ['name', 'usage'], { inOrder: true });
    const unchanged = await practice.api('GET', `/code-systems/${own.body.id}`);
    assert.deepEqual(unchanged.body, own.body);
  });
});
