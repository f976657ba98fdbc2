// What POST /encounters refuses, each as 422 validation_failed naming the field: diagnosis and procedure
// counts, code length, codes and systems that do not exist for this practice, diagnosisCodes that are
// not among the visit's diagnoses, a patient or practitioner that is not the practice's (answered as a
// made-up id is), and every wrong field reported in one answer. The rest: encounters.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  type Answer,
  apiClient,
  describeEachBackend,
  patientBody,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';
const TARIFF_URL = 'urn:service:codesystem:tariff';
const HOUR = 60 * 60 * 1000;

type Api = ReturnType<typeof apiClient>;

/** The first `n` codes of the shipped ICD-10 file (the code column is never quoted). */
function icdCodes(n: number): string[] {
  const lines = fs
    .readFileSync(path.resolve(import.meta.dirname, '..', 'catalogue', 'icd-10.csv'), 'utf8')
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '');
  const codes = lines.map((l) => l.split(',')[0]!.trim());
  assert.ok(codes.length >= n, `the catalogue holds at least ${n} ICD-10 codes`);
  return codes.slice(0, n);
}

describeEachBackend('encounter refusals', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: Api;
  let patientId: string;
  before(async () => {
    svc = await startService(backend);
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
    patientId = await patientOf(api);
  });
  after(async () => {
    await svc.close();
  });

  async function patientOf(client: Api): Promise<string> {
    const answer = await client('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  }

  function visit(overrides: Record<string, unknown> = {}) {
    const end = svc.clock.now().getTime() - HOUR;
    return {
      patientId,
      practitionerId: practice.practitionerId,
      start: new Date(end - HOUR / 2).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses: [{ system: ICD10_URL, code: 'J06.9' }],
      procedures: [{ system: TARIFF_URL, code: '0190' }],
      ...overrides,
    };
  }

  const record = (body: unknown, client: Api = api) =>
    client('POST', '/encounters', { body, idempotencyKey: uniqueKey() });

  async function recordedCount(): Promise<number> {
    const answer = await api('GET', `/encounters?patientId=${patientId}&limit=100`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body.data.length;
  }

  test('1 to 12 diagnoses and 1 to 40 procedures', async () => {
    const twelve = icdCodes(12).map((code) => ({ system: ICD10_URL, code }));
    const fortyProcedures = Array.from({ length: 40 }, (_, i) => ({
      code: ['0190', '0191', '0192'][i % 3]!,
    }));
    const most = await record(visit({ diagnoses: twelve, procedures: fortyProcedures }));
    assert.equal(most.status, 201, most.text);
    assert.equal(most.body.diagnoses.length, 12);
    assert.equal(most.body.procedures.length, 40);
    assert.deepEqual(
      most.body.diagnoses.map((d: { code: string }) => d.code),
      twelve.map((d) => d.code),
    );
    const before = await recordedCount();
    refusedWith(await record(visit({ diagnoses: [] })), 422, 'validation_failed', ['diagnoses']);
    refusedWith(await record(visit({ diagnoses: [...twelve, { code: 'I10' }] })), 422, 'validation_failed', [
      'diagnoses',
    ]);
    refusedWith(await record(visit({ procedures: [] })), 422, 'validation_failed', ['procedures']);
    refusedWith(
      await record(visit({ procedures: [...fortyProcedures, { code: '0190' }] })),
      422,
      'validation_failed',
      ['procedures'],
    );
    refusedWith(await record(visit({ diagnoses: undefined })), 422, 'validation_failed', ['diagnoses']);
    refusedWith(await record(visit({ procedures: undefined })), 422, 'validation_failed', ['procedures']);
    assert.equal(await recordedCount(), before, 'nothing was recorded');
  });

  test('a code is required and at most 40 characters', async () => {
    const long = `A${'1'.repeat(40)}`;
    const tooLong = await record(visit({ procedures: [{ system: TARIFF_URL, code: long }] }));
    refusedWith(tooLong, 422, 'validation_failed', ['procedures.0.code']);
    assert.match(tooLong.body.errors[0].message, /40/, 'refused for its length');
    const longDiagnosis = await record(visit({ diagnoses: [{ code: 'I10' }, { code: long }] }));
    refusedWith(longDiagnosis, 422, 'validation_failed', ['diagnoses.1.code']);
    assert.match(longDiagnosis.body.errors[0].message, /40/);
    const missing = await record(visit({ diagnoses: [{ system: ICD10_URL }] }));
    refusedWith(missing, 422, 'validation_failed', ['diagnoses.0.code']);
    assert.equal(missing.body.errors[0].code, 'required');
    // 40 characters pass the bound and are then looked up (and not found)
    refusedWith(
      await record(visit({ procedures: [{ code: long.slice(0, 40) }] })),
      422,
      'validation_failed',
      ['procedures.0.code'],
    );
  });

  test('a code that its system does not hold is 422 naming diagnoses.N.code or procedures.N.code', async () => {
    refusedWith(
      await record(
        visit({
          diagnoses: [{ code: 'J06.9' }, { system: ICD10_URL, code: 'ZZ9.99' }],
          procedures: [{ code: '0190' }, { code: '0191' }, { system: TARIFF_URL, code: '9999' }],
        }),
      ),
      422,
      'validation_failed',
      ['diagnoses.1.code', 'procedures.2.code'],
    );
    // a real code, but of the other system
    refusedWith(
      await record(
        visit({ diagnoses: [{ system: TARIFF_URL, code: 'J06.9' }], procedures: [{ code: 'I10' }] }),
      ),
      422,
      'validation_failed',
      ['diagnoses.0.code', 'procedures.0.code'],
    );
    // codes are matched exactly
    refusedWith(await record(visit({ diagnoses: [{ code: 'j06.9' }] })), 422, 'validation_failed', [
      'diagnoses.0.code',
    ]);
  });

  test("an unknown system, or another practice's own, is 422 naming .system", async () => {
    const other = await svc.newPractice();
    const otherApi = apiClient(svc, other.key);
    const theirs = await otherApi('POST', '/code-systems', {
      body: { name: 'Private procedures', usage: ['procedure', 'condition'] },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(theirs.status, 201, theirs.text);
    const added = await otherApi('POST', `/code-systems/${theirs.body.id}/concepts`, {
      body: { code: 'PRIV1', display: 'Private code' },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(added.status, 201, added.text);
    refusedWith(
      await record(
        visit({
          diagnoses: [{ system: 'urn:nowhere:codes', code: 'J06.9' }],
          procedures: [{ code: '0190' }, { system: theirs.body.url, code: 'PRIV1' }],
        }),
      ),
      422,
      'validation_failed',
      ['diagnoses.0.system', 'procedures.1.system'],
    );
    // the owner can use it
    const ownerPatient = await patientOf(otherApi);
    const owned = await record(
      {
        ...visit({ procedures: [{ system: theirs.body.url, code: 'PRIV1' }] }),
        patientId: ownerPatient,
        practitionerId: other.practitionerId,
      },
      otherApi,
    );
    assert.equal(owned.status, 201, owned.text);
  });

  test("diagnosisCodes must name codes of the request's diagnoses", async () => {
    const ok = await record(
      visit({
        diagnoses: [{ code: 'J06.9' }, { code: 'I10' }],
        procedures: [
          { code: '0190', diagnosisCodes: ['I10'] },
          { code: '0191', diagnosisCodes: null },
        ],
      }),
    );
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.procedures[0].diagnosisCodes, ['I10']);
    assert.deepEqual(ok.body.procedures[1].diagnosisCodes, []);
    refusedWith(
      await record(
        visit({
          diagnoses: [{ code: 'J06.9' }, { code: 'I10' }],
          procedures: [
            { code: '0190', diagnosisCodes: ['J06.9'] },
            { code: '0191', diagnosisCodes: ['I10', 'E11.9', 'J06.9', 'M54.5'] },
          ],
        }),
      ),
      422,
      'validation_failed',
      ['procedures.1.diagnosisCodes.1', 'procedures.1.diagnosisCodes.3'],
    );
  });

  test("a patient or practitioner that is not the practice's is 422 naming it, as a made-up id is", async () => {
    const other = await svc.newPractice();
    const theirPatient = await patientOf(apiClient(svc, other.key));
    const pairs: Array<[string, Record<string, string>, Record<string, string>]> = [
      ['patientId', { patientId: theirPatient }, { patientId: 'pat_0000000000000000000000' }],
      [
        'practitionerId',
        { practitionerId: other.practitionerId },
        { practitionerId: 'prt_0000000000000000000000' },
      ],
    ];
    for (const [field, foreignFields, madeUpFields] of pairs) {
      const foreign = await record(visit(foreignFields));
      const madeUp = await record(visit(madeUpFields));
      refusedWith(foreign, 422, 'validation_failed', [field]);
      refusedWith(madeUp, 422, 'validation_failed', [field]);
      const foreignId = Object.values(foreignFields)[0]!;
      const madeUpId = Object.values(madeUpFields)[0]!;
      const normalise = (a: Answer, id: string) => {
        const { requestId: _r, ...rest } = a.body;
        return JSON.parse(JSON.stringify(rest).replaceAll(id, '<id>'));
      };
      assert.deepEqual(normalise(foreign, foreignId), normalise(madeUp, madeUpId));
      assert.ok(!foreign.text.includes(other.practiceId), foreign.text);
    }
    const theirList = await apiClient(svc, other.key)('GET', `/encounters?patientId=${theirPatient}`);
    assert.deepEqual(theirList.body.data, [], 'nothing was recorded on their patient');
  });

  test('every wrong field is reported at once in one answer', async () => {
    const now = svc.clock.now().getTime();
    const answer = await record({
      patientId: 'pat_nosuchpatient000000000',
      practitionerId: 'prt_nosuchpractitioner0000',
      start: new Date(now - 2 * HOUR).toISOString(),
      end: new Date(now - 3 * HOUR).toISOString(),
      diagnoses: [{ code: 'J06.9' }, { code: 'NOPE.1' }, { system: 'urn:none', code: 'I10' }],
      procedures: [
        { system: 'urn:none', code: '0190' },
        { code: '0191', diagnosisCodes: ['J06.9', 'E11.9'] },
        { code: '0000' },
      ],
    });
    refusedWith(answer, 422, 'validation_failed', [
      'patientId',
      'practitionerId',
      'end',
      'diagnoses.1.code',
      'diagnoses.2.system',
      'procedures.0.system',
      'procedures.1.diagnosisCodes.1',
      'procedures.2.code',
    ]);
    for (const e of answer.body.errors) {
      assert.equal(e.code, 'invalid');
      assert.ok(e.message.startsWith(e.field), e.message);
    }

    // the request's shape is checked all at once too
    const shape = await record({
      status: 'planned',
      patientId,
      start: '2026-01-01T10:00:00',
      end: new Date(now - HOUR).toISOString(),
      diagnoses: Array.from({ length: 13 }, () => ({ code: 'I10' })),
      procedures: [{ code: 'x'.repeat(41) }, { code: '0190', colour: 'blue' }],
      extra: true,
    });
    refusedWith(shape, 422, 'validation_failed', [
      'status',
      'practitionerId',
      'start',
      'diagnoses',
      'procedures.0.code',
      'procedures.1.colour',
      'extra',
    ]);
    assert.equal(
      shape.body.errors.find((e: { field: string }) => e.field === 'practitionerId').code,
      'required',
    );
  });
});
