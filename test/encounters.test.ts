// Recording and reading visits (POST /encounters, GET /encounters/{id}, GET /encounters?patientId=):
// the Encounter answer (catalogue wording, order kept, UTC times), offsets and real calendar times,
// the visit timing rules relative to now, the practitioner's default code system, and the newest-first
// paged list. Refusals of codes, counts and records: encounters-validation.test.ts; shared suites:
// encounters-contract.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
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
import { errorFields, refusedWith } from './support/refusals.ts';

const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';
const TARIFF_URL = 'urn:service:codesystem:tariff';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type Api = ReturnType<typeof apiClient>;

const iso = (ms: number) => new Date(ms).toISOString();
/** The UTC calendar date `days` before today. */
const utcDay = (now: number, days: number) => iso(now - days * DAY).slice(0, 10);

/** A day 31 of a month that has no such day, between 10 and 110 days ago (a date only a calendar check refuses). */
function missingDay31(now: number): string {
  for (let back = 10; back <= 110; back++) {
    const d = new Date(now - back * DAY);
    const daysInMonth = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
    if (daysInMonth < 31) return `${iso(d.getTime()).slice(0, 7)}-31`;
  }
  throw new Error('no short month in range');
}

describeEachBackend('encounters', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: Api;
  before(async () => {
    svc = await startService(backend);
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
  });
  after(async () => {
    await svc.close();
  });

  async function patient(client: Api = api): Promise<string> {
    const answer = await client('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  }

  function visit(patientId: string, overrides: Record<string, unknown> = {}) {
    const end = svc.clock.now().getTime() - HOUR;
    return {
      patientId,
      practitionerId: practice.practitionerId,
      start: iso(end - 30 * MINUTE),
      end: iso(end),
      diagnoses: [{ system: ICD10_URL, code: 'J06.9' }],
      procedures: [{ system: TARIFF_URL, code: '0190' }],
      ...overrides,
    };
  }

  const record = (body: unknown, client: Api = api) =>
    client('POST', '/encounters', { body, idempotencyKey: uniqueKey() });

  async function wording(systemId: string, code: string): Promise<string> {
    const answer = await api('GET', `/code-systems/${systemId}/concepts?code=${encodeURIComponent(code)}`);
    assert.equal(answer.body.data.length, 1, answer.text);
    return answer.body.data[0].display;
  }

  describe('POST /encounters', () => {
    test("records a completed outpatient visit with the catalogue's wording, order kept", async () => {
      const patientId = await patient();
      const body = {
        patientId,
        practitionerId: practice.practitionerId,
        start: iso(svc.clock.now().getTime() - 2 * HOUR),
        end: iso(svc.clock.now().getTime() - HOUR),
        diagnoses: [
          { system: ICD10_URL, code: 'J06.9', display: 'my own words for it' },
          { code: 'I10' },
          { system: ICD10_URL, code: 'E11.9', display: null },
        ],
        procedures: [
          {
            system: TARIFF_URL,
            code: '0191',
            display: 'Something else entirely',
            diagnosisCodes: ['I10', 'J06.9'],
            note: 'Long consult',
          },
          { code: '0190' },
        ],
      };
      const answer = await record(body);
      assert.equal(answer.status, 201, answer.text);
      const e = answer.body;
      assert.equal(e.object, 'encounter');
      assert.match(e.id, /^enc_/);
      assert.ok(
        answer.headers.get('location')?.endsWith(`/api/v1/encounters/${e.id}`),
        answer.headers.get('location') ?? '',
      );
      assert.equal(e.status, 'completed');
      assert.equal(e.class, 'amb');
      assert.equal(e.patientId, patientId);
      assert.equal(e.practitionerId, practice.practitionerId);
      assert.equal(e.start, body.start);
      assert.equal(e.end, body.end);
      assert.match(e.updatedAt, ISO_UTC);
      assert.deepEqual(
        e.diagnoses.map((d: { system: string; code: string; display: string }) => [
          d.system,
          d.code,
          d.display,
        ]),
        [
          [ICD10_URL, 'J06.9', await wording('cs_icd10', 'J06.9')],
          [ICD10_URL, 'I10', await wording('cs_icd10', 'I10')],
          [ICD10_URL, 'E11.9', await wording('cs_icd10', 'E11.9')],
        ],
      );
      assert.notEqual(e.diagnoses[0].display, 'my own words for it');
      const [first, second] = e.procedures;
      assert.deepEqual(
        { ...first, id: undefined },
        {
          id: undefined,
          status: 'completed',
          system: TARIFF_URL,
          code: '0191',
          display: await wording('cs_tariff', '0191'),
          diagnosisCodes: ['I10', 'J06.9'],
          note: 'Long consult',
        },
      );
      assert.deepEqual(
        { ...second, id: undefined },
        {
          id: undefined,
          status: 'completed',
          system: TARIFF_URL,
          code: '0190',
          display: await wording('cs_tariff', '0190'),
          diagnosisCodes: [],
          note: null,
        },
      );
      const childIds = [...e.diagnoses, ...e.procedures].map((x: { id: string }) => x.id);
      assert.equal(new Set(childIds).size, 5);
      for (const id of childIds) assert.equal(typeof id, 'string');

      const read = await api('GET', `/encounters/${e.id}`);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body, e);
    });

    test("a display of any length is ignored, not refused: the wording stays the catalogue's", async () => {
      const long = 'my own words '.repeat(400);
      const answer = await record({
        patientId: await patient(),
        practitionerId: practice.practitionerId,
        start: iso(svc.clock.now().getTime() - 2 * HOUR),
        end: iso(svc.clock.now().getTime() - HOUR),
        diagnoses: [{ system: ICD10_URL, code: 'J06.9', display: long }],
        procedures: [{ system: TARIFF_URL, code: '0190', display: long }],
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.diagnoses[0].display, await wording('cs_icd10', 'J06.9'));
      assert.equal(answer.body.procedures[0].display, await wording('cs_tariff', '0190'));
    });

    test('status may be sent as completed; any other status is 422 naming status', async () => {
      const patientId = await patient();
      const explicit = await record(visit(patientId, { status: 'completed' }));
      assert.equal(explicit.status, 201, explicit.text);
      assert.equal(explicit.body.status, 'completed');
      for (const status of ['planned', 'in_progress', 'cancelled', 'finished', null]) {
        refusedWith(await record(visit(patientId, { status })), 422, 'validation_failed', ['status']);
      }
    });

    test('times with an offset come back in UTC; seconds are optional', async () => {
      const patientId = await patient();
      const day = utcDay(svc.clock.now().getTime(), 3);
      const answer = await record(
        visit(patientId, { start: `${day}T10:00+02:00`, end: `${day}T09:30:15.5-01:00` }),
      );
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.start, `${day}T08:00:00.000Z`);
      assert.equal(answer.body.end, `${day}T10:30:15.500Z`);
      const zulu = await record(visit(patientId, { start: `${day}T10:00Z`, end: `${day}T10:45:30Z` }));
      assert.equal(zulu.status, 201, zulu.text);
      assert.equal(zulu.body.start, `${day}T10:00:00.000Z`);
      assert.equal(zulu.body.end, `${day}T10:45:30.000Z`);
      const read = await api('GET', `/encounters/${answer.body.id}`);
      assert.equal(read.body.start, `${day}T08:00:00.000Z`);
    });

    test('a time without offset, or that is not a real date and time, is 422 naming it', async () => {
      const patientId = await patient();
      const day = utcDay(svc.clock.now().getTime(), 3);
      const end = `${day}T23:00:00Z`;
      const bad = [
        `${day}T10:00:00`,
        `${day}T10:00`,
        `${day} 10:00:00Z`,
        `${day}`,
        '2025-02-29T10:00:00Z',
        `${missingDay31(svc.clock.now().getTime())}T10:00:00Z`,
        `${day}T24:00:00Z`,
        `${day}T10:60:00Z`,
        `${day}T10:00:61Z`,
        `${day}T10:00:00+25:00`,
        `${day}T10:00:00+0200`,
        'yesterday',
      ];
      for (const start of bad) {
        const answer = await record(visit(patientId, { start, end }));
        assert.equal(answer.status, 422, `${start}: ${answer.text}`);
        assert.deepEqual(errorFields(answer), ['start'], `${start}: ${answer.text}`);
      }
      refusedWith(
        await record(visit(patientId, { start: `${day}T10:00:00Z`, end: `${day}T24:00:00Z` })),
        422,
        'validation_failed',
        ['end'],
      );
      refusedWith(await record(visit(patientId, { end: undefined })), 422, 'validation_failed', ['end']);
      const listed = await api('GET', `/encounters?patientId=${patientId}`);
      assert.deepEqual(listed.body.data, [], 'nothing was recorded');
    });

    test('end before start, end in the future or start more than 120 days ago is 422', async () => {
      const patientId = await patient();
      const now = svc.clock.now().getTime();
      refusedWith(
        await record(visit(patientId, { start: iso(now - HOUR), end: iso(now - 2 * HOUR) })),
        422,
        'validation_failed',
        ['end'],
      );
      refusedWith(
        await record(visit(patientId, { start: iso(now - 10 * MINUTE), end: iso(now + 10 * MINUTE) })),
        422,
        'validation_failed',
        ['end'],
      );
      refusedWith(
        await record(visit(patientId, { start: iso(now - 121 * DAY), end: iso(now - 121 * DAY + HOUR) })),
        422,
        'validation_failed',
        ['start'],
      );
      // one entry per wrong field, even when a field breaks two rules
      refusedWith(
        await record(visit(patientId, { start: iso(now + 2 * HOUR), end: iso(now + HOUR) })),
        422,
        'validation_failed',
        ['end', 'start'],
      );

      const oldest = await record(
        visit(patientId, { start: iso(now - 119 * DAY), end: iso(now - 119 * DAY + HOUR) }),
      );
      assert.equal(oldest.status, 201, oldest.text);
      const instant = await record(visit(patientId, { start: iso(now - HOUR), end: iso(now - HOUR) }));
      assert.equal(instant.status, 201, instant.text);
      const justEnded = await record(visit(patientId, { start: iso(now - HOUR), end: iso(now - 1000) }));
      assert.equal(justEnded.status, 201, justEnded.text);
    });

    test("codes without system use the practitioner's default system for that kind of code", async () => {
      const system = await api('POST', '/code-systems', {
        body: { name: `Procedures ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
        idempotencyKey: uniqueKey(),
      });
      assert.equal(system.status, 201, system.text);
      const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
        body: { code: 'WC-1', display: 'Wound care, our way' },
        idempotencyKey: uniqueKey(),
      });
      assert.equal(concept.status, 201, concept.text);
      const practitioner = await svc.admin('POST', `/practices/${practice.practiceId}/practitioners`, {
        name: 'Dr Own Codes',
        defaultSystems: { procedure: system.body.url },
      });
      assert.equal(practitioner.status, 201, practitioner.text);
      const patientId = await patient();
      const body = visit(patientId, {
        practitionerId: practitioner.body.id,
        diagnoses: [{ code: 'M54.5' }],
        procedures: [{ code: 'WC-1', display: 'ignored' }],
      });
      const answer = await record(body);
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.practitionerId, practitioner.body.id);
      assert.equal(answer.body.diagnoses[0].system, ICD10_URL, 'condition default stays ICD-10');
      assert.equal(answer.body.procedures[0].system, system.body.url);
      assert.equal(answer.body.procedures[0].display, 'Wound care, our way');
      // the same codes under the standard practitioner default to the tariff, which lacks WC-1
      refusedWith(
        await record({ ...body, practitionerId: practice.practitionerId }),
        422,
        'validation_failed',
        ['procedures.0.code'],
      );
      // and the tariff's own code is not in the practitioner's default system
      refusedWith(await record({ ...body, procedures: [{ code: '0190' }] }), 422, 'validation_failed', [
        'procedures.0.code',
      ]);
      const explicit = await record({ ...body, procedures: [{ system: TARIFF_URL, code: '0190' }] });
      assert.equal(explicit.status, 201, explicit.text);
    });
  });

  describe('reading visits', () => {
    test("GET /encounters/{id} answers the visit; unknown or another practice's is 404, alike", async () => {
      const created = await record(visit(await patient()));
      assert.equal(created.status, 201, created.text);
      const read = await api('GET', `/encounters/${created.body.id}`);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body, created.body);
      const other = await svc.newPractice();
      const foreign = await apiClient(svc, other.key)('GET', `/encounters/${created.body.id}`);
      const unknown = await api('GET', '/encounters/enc_nosuchencounter00000');
      for (const a of [foreign, unknown]) {
        assert.equal(a.status, 404, a.text);
        assert.equal(a.body.code, 'not_found');
      }
      assert.equal(foreign.body.detail, unknown.body.detail);
    });

    test('GET /encounters?patientId= pages newest start first, every visit once', async () => {
      const patientId = await patient();
      const otherPatient = await patient();
      const now = svc.clock.now().getTime();
      const hoursAgo = [50, 10, 30, 30, 20];
      const made: string[] = [];
      for (const h of hoursAgo) {
        const answer = await record(
          visit(patientId, { start: iso(now - h * HOUR), end: iso(now - h * HOUR + HOUR / 2) }),
        );
        assert.equal(answer.status, 201, answer.text);
        made.push(answer.body.id);
      }
      const theirs = await record(
        visit(otherPatient, { start: iso(now - 15 * HOUR), end: iso(now - 14 * HOUR) }),
      );
      assert.equal(theirs.status, 201, theirs.text);

      // biome-ignore lint/suspicious/noExplicitAny: list items are plain JSON
      const seen: any[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await api(
          'GET',
          `/encounters?patientId=${patientId}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.body.object, 'list');
        assert.ok(answer.body.data.length <= 2);
        seen.push(...answer.body.data);
        cursor = answer.body.nextCursor;
        assert.equal(answer.body.hasMore, cursor !== null);
        pages++;
      } while (cursor && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual(seen.map((e) => e.id).sort(), [...made].sort(), 'every visit once');
      const starts = seen.map((e) => Date.parse(e.start));
      assert.deepEqual(
        starts,
        [...starts].sort((a, b) => b - a),
        'newest start first',
      );
      assert.equal(seen[0].id, made[1]);
      assert.equal(seen.at(-1).id, made[0]);
      for (const e of seen) {
        assert.equal(e.patientId, patientId);
        assert.equal(e.diagnoses.length, 1);
        assert.equal(e.procedures.length, 1);
      }
      const whole = await api('GET', `/encounters?patientId=${patientId}`);
      assert.deepEqual(whole.body.data, seen);

      const all = await api('GET', '/encounters?limit=100');
      const allIds = all.body.data.map((e: { id: string }) => e.id);
      assert.ok(allIds.includes(theirs.body.id) && made.every((id) => allIds.includes(id)));
      const other = await svc.newPractice();
      const foreign = await apiClient(svc, other.key)('GET', `/encounters?patientId=${patientId}`);
      assert.equal(foreign.status, 200, foreign.text);
      assert.deepEqual(foreign.body.data, [], 'another practice sees none of them');
    });

    test('bad limits and cursors of another filter or tampered are 400', async () => {
      const patientId = await patient();
      const otherPatient = await patient();
      for (let i = 0; i < 3; i++) assert.equal((await record(visit(patientId))).status, 201);
      assert.equal((await record(visit(otherPatient))).status, 201);
      const first = await api('GET', `/encounters?patientId=${patientId}&limit=1`);
      const cursor = encodeURIComponent(first.body.nextCursor);
      const ok = await api('GET', `/encounters?patientId=${patientId}&limit=1&cursor=${cursor}`);
      assert.equal(ok.status, 200, ok.text);
      for (const query of [
        `patientId=${otherPatient}&limit=1&cursor=${cursor}`,
        `limit=1&cursor=${cursor}`,
        `patientId=${patientId}&limit=1&cursor=${cursor}x`,
        `patientId=${patientId}&limit=1&cursor=e30.e30`,
      ]) {
        const answer = await api('GET', `/encounters?${query}`);
        assert.equal(answer.status, 400, `${query}: ${answer.text}`);
        assert.equal(answer.body.code, 'invalid_cursor');
      }
      for (const limit of ['0', '101']) {
        const answer = await api('GET', `/encounters?patientId=${patientId}&limit=${limit}`);
        assert.equal(answer.status, 400, answer.text);
        assert.deepEqual(errorFields(answer), ['limit']);
      }
    });
  });
});
