// Reading a patient, finding patients by the practice's own number, and correcting a patient with a
// JSON merge patch (PATCH /patients/{id}).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { addClient } from './contract-suites.ts';
import {
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { errorFields } from './support/refusals.ts';

const SYSTEM = 'urn:test:mrn';

describeEachBackend('reading and correcting patients', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: ReturnType<typeof apiClient>;
  before(async () => {
    svc = await startService(backend);
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
  });
  after(async () => {
    await svc.close();
  });

  // biome-ignore lint/suspicious/noExplicitAny: a Patient read as plain JSON
  async function registered(overrides: Record<string, unknown> = {}): Promise<any> {
    const body = patientBody({ externalId: { system: SYSTEM, value: `mrn-${uniqueKey()}` }, ...overrides });
    const answer = await api('POST', '/patients', { body, idempotencyKey: uniqueKey() });
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  }

  const find = (system: string, value: string) =>
    api(
      'GET',
      `/patients?externalSystem=${encodeURIComponent(system)}&externalId=${encodeURIComponent(value)}`,
    );
  const patch = (id: string, body: unknown, contentType?: string) =>
    api('PATCH', `/patients/${id}`, {
      rawBody: JSON.stringify(body),
      headers: { 'content-type': contentType ?? 'application/json' },
    });

  test('GET /patients/{id} answers the patient as registered; an unknown id is 404 not_found', async () => {
    const patient = await registered({ prefix: 'Ms', gender: 'female' });
    const read = await api('GET', `/patients/${patient.id}`);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body, patient);

    for (const id of ['pat_0000000000000000000000', 'nonsense', `${patient.id}x`]) {
      const missing = await api('GET', `/patients/${id}`);
      assert.equal(missing.status, 404, missing.text);
      assert.equal(missing.body.code, 'not_found');
    }
  });

  test('GET /patients finds by the practice number: a list with hasMore false, nextCursor null', async () => {
    const patient = await registered();
    const found = await find(SYSTEM, patient.externalId.value);
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(found.body, { object: 'list', data: [patient], hasMore: false, nextCursor: null });

    for (const [system, value] of [
      [SYSTEM, 'no-such-number'],
      ['urn:test:other', patient.externalId.value],
      [SYSTEM, patient.externalId.value.toUpperCase()],
    ] as const) {
      const none = await find(system, value);
      assert.equal(none.status, 200, none.text);
      assert.deepEqual(none.body, { object: 'list', data: [], hasMore: false, nextCursor: null });
    }
  });

  test('GET /patients without one of its parameters is 400 naming it', async () => {
    const noSystem = await api('GET', '/patients?externalId=123');
    assert.equal(noSystem.status, 400, noSystem.text);
    assert.equal(noSystem.body.code, 'invalid_request');
    assert.deepEqual(errorFields(noSystem), ['externalSystem']);
    const noValue = await api('GET', `/patients?externalSystem=${SYSTEM}&externalId=`);
    assert.equal(noValue.status, 400, noValue.text);
    assert.deepEqual(errorFields(noValue), ['externalId']);
  });

  test('PATCH changes the fields sent and keeps the rest', async () => {
    const patient = await registered({
      prefix: 'Mr',
      gender: 'male',
      contactPoints: [{ system: 'sms', value: '082' }],
    });
    svc.clock.advance(1_000);
    const answer = await patch(patient.id, { lastName: 'Nkosi', givenNames: ['Thabo'] });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body, {
      ...patient,
      lastName: 'Nkosi',
      givenNames: ['Thabo'],
      updatedAt: answer.body.updatedAt,
    });
    assert.ok(Date.parse(answer.body.updatedAt) > Date.parse(patient.updatedAt), 'updatedAt moves on');
    assert.deepEqual((await api('GET', `/patients/${patient.id}`)).body, answer.body);
  });

  test('PATCH accepts application/merge-patch+json; objects merge, arrays replace', async () => {
    const patient = await registered({
      addresses: [{ city: 'Durban', country: 'ZA' }],
      identifiers: [{ type: 'passport', value: 'A1' }],
    });
    const answer = await patch(
      patient.id,
      { externalId: { value: 'renumbered-1' }, identifiers: [{ type: 'national_id', value: '800101' }] },
      'application/merge-patch+json',
    );
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.externalId, { system: SYSTEM, value: 'renumbered-1' });
    assert.deepEqual(answer.body.identifiers, [{ type: 'national_id', value: '800101' }]);
    assert.deepEqual(answer.body.addresses, patient.addresses);
    assert.equal((await find(SYSTEM, 'renumbered-1')).body.data[0]?.id, patient.id);
    assert.deepEqual((await find(SYSTEM, patient.externalId.value)).body.data, []);
  });

  test('PATCH merges externalId into the stored one: a patient without one needs both system and value', async () => {
    const patient = await registered({ externalId: null });
    const systemOnly = await patch(patient.id, { externalId: { system: SYSTEM } });
    assert.equal(systemOnly.status, 422, systemOnly.text);
    assert.deepEqual(
      systemOnly.body.errors.map((e: { field: string }) => e.field),
      ['externalId.value'],
    );
    const both = await patch(patient.id, { externalId: { system: SYSTEM, value: `mrn-${uniqueKey()}` } });
    assert.equal(both.status, 200, both.text);
  });

  test('PATCH with null clears an optional field', async () => {
    const patient = await registered({ prefix: 'Prof', gender: 'other' });
    const answer = await patch(patient.id, { prefix: null, gender: null, externalId: null });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.prefix, null);
    assert.equal(answer.body.gender, null);
    assert.equal(answer.body.externalId, null);
    assert.equal(answer.body.lastName, patient.lastName);
  });

  test('PATCH cannot clear a required field or break a PatientRequest rule; nothing changes', async () => {
    const patient = await registered();
    const cases: Array<[unknown, string[]]> = [
      [{ lastName: null }, ['lastName']],
      [{ givenNames: null }, ['givenNames']],
      [{ birthDate: null }, ['birthDate']],
      [{ givenNames: [] }, ['givenNames']],
      [{ lastName: 'L'.repeat(101) }, ['lastName']],
      [{ birthDate: '1990-02-29' }, ['birthDate']],
      [{ birthDate: '2999-01-01' }, ['birthDate']],
      [
        { gender: 'M', contactPoints: [{ system: 'pigeon', value: '1' }] },
        ['contactPoints.0.system', 'gender'],
      ],
      [{ nickname: 'Lulu' }, ['nickname']],
      [{ externalId: { value: 'v'.repeat(101) } }, ['externalId.value']],
    ];
    for (const [body, fields] of cases) {
      const answer = await patch(patient.id, body);
      assert.equal(answer.status, 422, `${JSON.stringify(body)}: ${answer.text}`);
      assert.equal(answer.body.code, 'validation_failed');
      assert.deepEqual(errorFields(answer), fields, JSON.stringify(body));
    }
    assert.deepEqual((await api('GET', `/patients/${patient.id}`)).body, patient);
  });

  test("PATCH to another patient's externalId is 409 duplicate naming that patient", async () => {
    const first = await registered();
    const second = await registered();
    const answer = await patch(second.id, { externalId: first.externalId });
    assert.equal(answer.status, 409, answer.text);
    assert.equal(answer.body.code, 'duplicate');
    assert.ok(answer.body.detail.includes(first.id), answer.body.detail);
    assert.deepEqual((await api('GET', `/patients/${second.id}`)).body, second);
    // keeping one's own number is no conflict
    const same = await patch(first.id, { externalId: first.externalId, lastName: 'Same' });
    assert.equal(same.status, 200, same.text);
  });

  test('PATCH on an unknown patient is 404 not_found', async () => {
    const answer = await patch('pat_0000000000000000000000', { lastName: 'Nobody' });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.body.code, 'not_found');
  });

  test('PATCH needs PATIENTS:UPDATE: reading and creating are not enough', async () => {
    const patient = await registered();
    const reader = await addClient(svc, practice.practiceId, {
      permissions: ['PATIENTS:READ', 'PATIENTS:CREATE'],
    });
    const answer = await apiClient(svc, reader.key)('PATCH', `/patients/${patient.id}`, {
      body: { lastName: 'Changed' },
    });
    assert.equal(answer.status, 403, answer.text);
    assert.equal(answer.body.code, 'forbidden');
    assert.deepEqual((await api('GET', `/patients/${patient.id}`)).body, patient);
  });
});
