// Registering patients (POST /patients): every field and bound of PatientRequest, the Patient answer,
// the value sets from DECISIONS, duplicate practice numbers (also when racing) and X-Service-Performer.
// Reading, finding and PATCH: patients-read-update.test.ts; shared suites: patients-contract.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { auditRowFor } from './contract-suites.ts';
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

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

describeEachBackend('registering patients', (backend) => {
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

  const register = (body: unknown, headers?: Record<string, string>) =>
    api('POST', '/patients', { body, idempotencyKey: uniqueKey(), ...(headers ? { headers } : {}) });

  async function accepted(overrides: Record<string, unknown>) {
    const answer = await register(patientBody(overrides));
    assert.equal(answer.status, 201, `${JSON.stringify(overrides)}: ${answer.text}`);
    return answer.body;
  }

  async function refused(overrides: Record<string, unknown>, fields: string[]) {
    const answer = await register(patientBody(overrides));
    assert.equal(answer.status, 422, `${JSON.stringify(overrides)}: ${answer.text}`);
    assert.equal(answer.body.code, 'validation_failed');
    assert.deepEqual(errorFields(answer), [...fields].sort(), JSON.stringify(overrides));
  }

  test('a full registration answers 201, Location, and the Patient as sent', async () => {
    const body = {
      prefix: 'Dr',
      givenNames: ['Lerato', 'Grace'],
      lastName: 'Dlamini',
      gender: 'female',
      birthDate: '1992-02-29',
      identifiers: [{ type: 'national_id', value: '9202290000000' }],
      externalId: { system: 'https://acme.example/mrn', value: `MRN-${uniqueKey()}` },
      contactPoints: [{ system: 'email', value: 'lerato@example.test', use: 'home', rank: 1 }],
      addresses: [
        {
          type: 'physical',
          use: 'home',
          lines: ['12 Long Street', 'Flat 3'],
          city: 'Cape Town',
          district: 'City Bowl',
          state: 'Western Cape',
          postalCode: '8001',
          country: 'ZA',
        },
      ],
    };
    const before = svc.clock.now().getTime();
    const answer = await register(body);
    assert.equal(answer.status, 201, answer.text);
    const { id, updatedAt, ...rest } = answer.body;
    assert.match(id, /^pat_[0-9A-Za-z]{16,}$/);
    assert.deepEqual(rest, {
      object: 'patient',
      active: true,
      ...body,
      organizationId: practice.practiceId,
    });
    assert.match(updatedAt, ISO_UTC);
    assert.ok(Math.abs(Date.parse(updatedAt) - before) < 60_000, updatedAt);
    assert.equal(answer.headers.get('location'), `${svc.baseUrl}/api/v1/patients/${id}`);
    const read = await api('GET', new URL(answer.headers.get('location')!).pathname.replace('/api/v1', ''));
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, answer.body);
  });

  test('optional fields left out or null come back as null or empty lists', async () => {
    const minimal = { givenNames: ['Sipho'], lastName: 'Khumalo', birthDate: '1985-07-01' };
    for (const body of [
      minimal,
      {
        ...minimal,
        prefix: null,
        gender: null,
        identifiers: null,
        externalId: null,
        contactPoints: null,
        addresses: null,
      },
    ]) {
      const answer = await register(body);
      assert.equal(answer.status, 201, answer.text);
      const { id: _id, updatedAt: _u, ...rest } = answer.body;
      assert.deepEqual(rest, {
        object: 'patient',
        active: true,
        prefix: null,
        givenNames: ['Sipho'],
        lastName: 'Khumalo',
        gender: null,
        birthDate: '1985-07-01',
        identifiers: [],
        externalId: null,
        contactPoints: [],
        addresses: [],
        organizationId: practice.practiceId,
      });
    }
    const partial = await accepted({
      contactPoints: [{ system: 'phone', value: '+27215550100' }],
      addresses: [{ city: 'Durban' }],
    });
    assert.deepEqual(partial.contactPoints, [
      { system: 'phone', value: '+27215550100', use: null, rank: null },
    ]);
    assert.deepEqual(partial.addresses, [
      {
        type: null,
        use: null,
        lines: [],
        city: 'Durban',
        district: null,
        state: null,
        postalCode: null,
        country: null,
      },
    ]);
  });

  test('givenNames holds 1 to 10 entries', async () => {
    await refused({ givenNames: [] }, ['givenNames']);
    await refused({ givenNames: 'Lerato' }, ['givenNames']);
    const names = Array.from({ length: 10 }, (_, i) => `Name${i}`);
    assert.deepEqual((await accepted({ givenNames: ['One'] })).givenNames, ['One']);
    assert.deepEqual((await accepted({ givenNames: names })).givenNames, names);
    await refused({ givenNames: [...names, 'Eleven'] }, ['givenNames']);
    await refused({ givenNames: ['Ok', 42] }, ['givenNames.1']);
  });

  test('lastName is required, at most 100 characters', async () => {
    assert.equal((await accepted({ lastName: 'L'.repeat(100) })).lastName, 'L'.repeat(100));
    await refused({ lastName: 'L'.repeat(101) }, ['lastName']);
    await refused({ lastName: null }, ['lastName']);
    const { lastName: _gone, ...withoutLastName } = patientBody();
    const answer = await register(withoutLastName);
    assert.equal(answer.status, 422, answer.text);
    assert.deepEqual(
      answer.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]),
      [['lastName', 'required']],
    );
  });

  test('externalId: system a URI of at most 255 characters, value at most 100', async () => {
    const system255 = `urn:test:${'s'.repeat(246)}`;
    assert.equal(system255.length, 255);
    const ok = await accepted({ externalId: { system: system255, value: 'v'.repeat(100) } });
    assert.deepEqual(ok.externalId, { system: system255, value: 'v'.repeat(100) });
    await refused({ externalId: { system: `${system255}s`, value: '1' } }, ['externalId.system']);
    await refused({ externalId: { system: 'urn:test:mrn', value: 'v'.repeat(101) } }, ['externalId.value']);
    await refused({ externalId: { system: 'our numbers', value: '1' } }, ['externalId.system']);
    await refused({ externalId: { system: 'urn:test:mrn' } }, ['externalId.value']);
  });

  test('birthDate is a real calendar date, not in the future', async () => {
    assert.equal((await accepted({ birthDate: '1992-02-29' })).birthDate, '1992-02-29');
    assert.equal((await accepted({ birthDate: '2000-02-29' })).birthDate, '2000-02-29');
    assert.equal((await accepted({ birthDate: '1900-01-01' })).birthDate, '1900-01-01');
    for (const bad of ['1990-02-29', '1900-02-29', '2023-13-01', '2023-04-31', '2023-00-10', '1990-2-3']) {
      await refused({ birthDate: bad }, ['birthDate']);
    }
    await refused({ birthDate: '1990-02-28T00:00:00Z' }, ['birthDate']);
    const inTwoDays = new Date(svc.clock.now().getTime() + 2 * 86_400_000).toISOString().slice(0, 10);
    await refused({ birthDate: inTwoDays }, ['birthDate']);
    await refused({ birthDate: '2999-01-01' }, ['birthDate']);
    const yesterday = new Date(svc.clock.now().getTime() - 2 * 86_400_000).toISOString().slice(0, 10);
    assert.equal((await accepted({ birthDate: yesterday })).birthDate, yesterday);
  });

  test('gender is one of male, female, other, unknown', async () => {
    for (const gender of ['male', 'female', 'other', 'unknown']) {
      assert.equal((await accepted({ gender })).gender, gender);
    }
    for (const gender of ['M', 'Female', '', 'nonbinary']) await refused({ gender }, ['gender']);
  });

  test('contact points: system and use from the FHIR value sets, rank an integer', async () => {
    const systems = ['phone', 'fax', 'email', 'pager', 'url', 'sms', 'other'];
    const uses = ['home', 'work', 'temp', 'old', 'mobile'];
    const contactPoints = systems.map((system, i) => ({
      system,
      value: `${system}-value`,
      use: uses[i % uses.length]!,
      rank: i + 1,
    }));
    assert.deepEqual((await accepted({ contactPoints })).contactPoints, contactPoints);
    await refused({ contactPoints: [{ system: 'telex', value: '1' }] }, ['contactPoints.0.system']);
    await refused(
      {
        contactPoints: [
          { system: 'phone', value: '1' },
          { system: 'phone', value: '2', use: 'cell' },
        ],
      },
      ['contactPoints.1.use'],
    );
    await refused({ contactPoints: [{ system: 'phone', value: '1', rank: 1.5 }] }, ['contactPoints.0.rank']);
    await refused({ contactPoints: [{ system: 'phone' }] }, ['contactPoints.0.value']);
  });

  test('addresses: type and use from the FHIR value sets, country a two-letter code', async () => {
    const types = ['postal', 'physical', 'both'];
    const uses = ['home', 'work', 'temp', 'old', 'billing'];
    const addresses = uses.map((use, i) => ({
      type: types[i % types.length]!,
      use,
      lines: [`${i} Main Road`],
      city: 'Pretoria',
      district: null,
      state: 'Gauteng',
      postalCode: '0002',
      country: 'ZA',
    }));
    assert.deepEqual((await accepted({ addresses })).addresses, addresses);
    await refused({ addresses: [{ type: 'residential' }] }, ['addresses.0.type']);
    await refused({ addresses: [{ use: 'holiday' }] }, ['addresses.0.use']);
    await refused({ addresses: [{ country: 'ZAF' }] }, ['addresses.0.country']);
    await refused({ addresses: [{ lines: 'one line' }] }, ['addresses.0.lines']);
  });

  test('a second patient with the same externalId is 409 duplicate naming the first', async () => {
    const externalId = { system: 'urn:test:mrn', value: `dup-${uniqueKey()}` };
    const first = await register(patientBody({ externalId }));
    assert.equal(first.status, 201, first.text);
    const second = await register(patientBody({ externalId, givenNames: ['Other'] }));
    assert.equal(second.status, 409, second.text);
    assert.equal(second.body.code, 'duplicate');
    assert.ok(second.body.detail.includes(first.body.id), second.body.detail);
    const found = await api(
      'GET',
      `/patients?externalSystem=urn%3Atest%3Amrn&externalId=${externalId.value}`,
    );
    assert.deepEqual(
      found.body.data.map((p: { id: string }) => p.id),
      [first.body.id],
    );

    // the same number in another system, or in another practice, is another patient
    assert.equal(
      (await register(patientBody({ externalId: { ...externalId, system: 'urn:test:other' } }))).status,
      201,
    );
    const elsewhere = await svc.newPractice();
    const theirs = await apiClient(svc, elsewhere.key)('POST', '/patients', {
      body: patientBody({ externalId }),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(theirs.status, 201, theirs.text);
    assert.ok(!theirs.text.includes(first.body.id));
  });

  test('racing registrations of one number: exactly one 201, the rest 409 duplicate naming it', async () => {
    const externalId = { system: 'urn:test:mrn', value: `race-${uniqueKey()}` };
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => register(patientBody({ externalId, givenNames: [`Racer${i}`] }))),
    );
    const created = answers.filter((a) => a.status === 201);
    assert.equal(created.length, 1, answers.map((a) => `${a.status} ${a.body?.code ?? ''}`).join(', '));
    const winner = created[0]!.body.id as string;
    for (const a of answers.filter((x) => x.status !== 201)) {
      assert.equal(a.status, 409, a.text);
      assert.equal(a.body.code, 'duplicate');
      assert.ok(a.body.detail.includes(winner), a.body.detail);
    }
    const found = await api(
      'GET',
      `/patients?externalSystem=urn%3Atest%3Amrn&externalId=${externalId.value}`,
    );
    assert.equal(found.body.data.length, 1);
  });

  test('X-Service-Performer: a practitioner of the practice is recorded in the audit trail', async () => {
    const answer = await register(patientBody(), { 'x-service-performer': practice.practitionerId });
    assert.equal(answer.status, 201, answer.text);
    const row = await auditRowFor(svc, practice.practiceId, answer);
    assert.equal(row.performerId, practice.practitionerId);
    assert.equal(row.status, 201);
    assert.equal(row.resourceId, answer.body.id);

    const without = await register(patientBody());
    assert.equal((await auditRowFor(svc, practice.practiceId, without)).performerId, null);
  });

  test('X-Service-Performer naming no practitioner of this practice is 400 naming the header', async () => {
    const other = await svc.newPractice();
    for (const performer of [
      'prt_0000000000000000000000',
      other.practitionerId,
      'x'.repeat(150),
      practice.practitionerId.replace('prt_', 'pat_'),
      `${practice.practitionerId}x`,
    ]) {
      const body = patientBody();
      const answer = await register(body, { 'x-service-performer': performer });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.code, 'invalid_request');
      assert.deepEqual(errorFields(answer), ['X-Service-Performer']);
      const found = await api(
        'GET',
        `/patients?externalSystem=${encodeURIComponent(body.externalId.system)}&externalId=${body.externalId.value}`,
      );
      assert.deepEqual(found.body.data, [], 'nothing was registered');
    }
  });
});
