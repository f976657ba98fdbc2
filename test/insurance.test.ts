// Insurance plans (GET /insurance-plans) and patient coverages (POST and GET /patients/{id}/coverages):
// finding plans by part of the name or an alias, the 2-character floor, optionCode, paging; registering
// a membership with its refusals, when a coverage is active, and the registration order of the list.
// Expectations about plans are read from the shipped catalogue (catalogue/insurance.json).
// Shared suites: insurance-contract.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
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
import { refusedWith } from './support/refusals.ts';

interface CataloguePlan {
  id: string;
  name: string;
  aliases?: string[];
  optionCode?: string | null;
  active?: boolean;
}
const catalogue = JSON.parse(
  fs.readFileSync(path.resolve(import.meta.dirname, '..', 'catalogue', 'insurance.json'), 'utf8'),
) as { schemes: Array<{ id: string; name: string; plans: CataloguePlan[] }> };
const PLANS = catalogue.schemes.flatMap((s) =>
  s.plans.map((p) => ({ ...p, schemeId: s.id, schemeName: s.name })),
);
const ACTIVE_PLAN = PLANS.find((p) => p.active !== false)!;
const INACTIVE_PLAN = PLANS.find((p) => p.active === false)!;

/** Plans whose name or an alias contains `q`, ignoring case: what the name filter must find. */
function plansMatching(q: string): string[] {
  const needle = q.toLowerCase();
  return PLANS.filter((p) => [p.name, ...(p.aliases ?? [])].some((n) => n.toLowerCase().includes(needle)))
    .map((p) => p.id)
    .sort();
}

/** The calendar date `days` from the service's today in the practice's time zone (the default, Africa/Johannesburg). */
function practiceDate(svc: TestService, days: number): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: 'Africa/Johannesburg',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(new Date(svc.clock.now().getTime() + days * 86_400_000));
}

describeEachBackend('insurance', (backend) => {
  let svc: TestService;
  let practice: TestPractice;
  let api: ReturnType<typeof apiClient>;
  before(async () => {
    assert.ok(ACTIVE_PLAN && INACTIVE_PLAN, 'the catalogue has an active and an inactive plan');
    svc = await startService(backend);
    practice = await svc.newPractice();
    api = apiClient(svc, practice.key);
  });
  after(async () => {
    await svc.close();
  });

  const ids = (answer: Answer) => answer.body.data.map((p: { id: string }) => p.id).sort();

  describe('GET /insurance-plans', () => {
    test('lists every plan of the catalogue with its insurer; an inactive plan has active false', async () => {
      const answer = await api('GET', '/insurance-plans?limit=100');
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.object, 'list');
      assert.deepEqual(ids(answer), PLANS.map((p) => p.id).sort());
      for (const plan of answer.body.data) {
        const expected = PLANS.find((p) => p.id === plan.id)!;
        assert.deepEqual(plan, {
          object: 'insurance_plan',
          id: expected.id,
          name: expected.name,
          aliases: expected.aliases ?? [],
          active: expected.active !== false,
          optionCode: expected.optionCode ?? null,
          insurerId: expected.schemeId,
          insurerName: expected.schemeName,
        });
      }
      const inactive = answer.body.data.find((p: { id: string }) => p.id === INACTIVE_PLAN.id);
      assert.equal(inactive.active, false);
      assert.equal(typeof inactive.insurerId, 'string');
      assert.equal(typeof inactive.insurerName, 'string');
    });

    test('name matches part of the plan name or of an alias, ignoring case', async () => {
      // a word of a plan name, from its middle, in other case
      const word = ACTIVE_PLAN.name.split(' ').at(-1)!;
      const part = word.slice(1, Math.max(3, word.length - 1)).toUpperCase();
      const byName = await api('GET', `/insurance-plans?limit=100&name=${encodeURIComponent(part)}`);
      assert.equal(byName.status, 200, byName.text);
      assert.ok(ids(byName).includes(ACTIVE_PLAN.id));
      assert.deepEqual(ids(byName), plansMatching(part));

      // an alias that is not part of its plan's name finds the plan
      const aliased = PLANS.flatMap((p) =>
        (p.aliases ?? []).map((a) => ({ plan: p, alias: a.split(' ').at(-1)! })),
      ).find(({ plan, alias }) => !plan.name.toLowerCase().includes(alias.toLowerCase()));
      assert.ok(aliased, 'the catalogue has an alias not contained in its plan name');
      const byAlias = await api(
        'GET',
        `/insurance-plans?limit=100&name=${encodeURIComponent(aliased.alias.toLowerCase())}`,
      );
      assert.equal(byAlias.status, 200, byAlias.text);
      assert.ok(ids(byAlias).includes(aliased.plan.id), byAlias.text);
      assert.deepEqual(ids(byAlias), plansMatching(aliased.alias));

      const none = await api('GET', '/insurance-plans?name=zzqqxx');
      assert.deepEqual(none.body.data, []);
      assert.equal(none.body.hasMore, false);
      // wildcard characters are matched literally
      assert.deepEqual((await api('GET', '/insurance-plans?name=%25%25')).body.data, []);
      assert.deepEqual((await api('GET', '/insurance-plans?name=__')).body.data, []);
    });

    test('a name of fewer than 2 characters is 400 naming name; 2 characters are enough', async () => {
      refusedWith(await api('GET', '/insurance-plans?name=U'), 400, 'invalid_request', ['name']);
      refusedWith(await api('GET', '/insurance-plans?name='), 400, 'invalid_request', ['name']);
      const two = ACTIVE_PLAN.name.slice(0, 2);
      const answer = await api('GET', `/insurance-plans?limit=100&name=${encodeURIComponent(two)}`);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(ids(answer), plansMatching(two));
    });

    test('optionCode finds the plan with that option code', async () => {
      const withCode = PLANS.filter((p) => p.optionCode);
      assert.ok(withCode.length > 0);
      for (const plan of withCode.slice(0, 3)) {
        const answer = await api(
          'GET',
          `/insurance-plans?optionCode=${encodeURIComponent(plan.optionCode!)}`,
        );
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(
          ids(answer),
          PLANS.filter((p) => p.optionCode === plan.optionCode)
            .map((p) => p.id)
            .sort(),
        );
      }
      assert.deepEqual((await api('GET', '/insurance-plans?optionCode=NOPE99')).body.data, []);
      const plan = withCode[0]!;
      const otherName = PLANS.find((p) => !p.name.includes(plan.name.slice(0, 4)))!.name.slice(0, 4);
      const combined = await api(
        'GET',
        `/insurance-plans?optionCode=${encodeURIComponent(plan.optionCode!)}&name=${encodeURIComponent(otherName)}`,
      );
      assert.deepEqual(combined.body.data, [], 'both filters apply');
    });

    test('pages of 2 return every plan once; bad limits and foreign cursors are 400', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 50; page++) {
        const answer: Answer = await api(
          'GET',
          `/insurance-plans?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(answer.status, 200, answer.text);
        seen.push(...answer.body.data.map((p: { id: string }) => p.id));
        cursor = answer.body.nextCursor;
        if (!cursor) break;
      }
      assert.equal(seen.length, PLANS.length);
      assert.deepEqual([...seen].sort(), PLANS.map((p) => p.id).sort());
      const whole = await api('GET', '/insurance-plans?limit=100');
      assert.deepEqual(
        seen,
        whole.body.data.map((p: { id: string }) => p.id),
      );
      for (const limit of ['0', '101', 'x']) {
        refusedWith(await api('GET', `/insurance-plans?limit=${limit}`), 400, 'invalid_request', ['limit']);
      }
      const first = await api('GET', '/insurance-plans?limit=1');
      const c = encodeURIComponent(first.body.nextCursor);
      refusedWith(await api('GET', `/insurance-plans?limit=1&name=an&cursor=${c}`), 400, 'invalid_cursor');
      refusedWith(await api('GET', `/code-systems?limit=1&cursor=${c}`), 400, 'invalid_cursor');
      refusedWith(await api('GET', '/insurance-plans?limit=1&cursor=abc.def'), 400, 'invalid_cursor');
    });
  });

  describe('patient coverages', () => {
    async function patient(): Promise<string> {
      const answer = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
      assert.equal(answer.status, 201, answer.text);
      return answer.body.id;
    }
    const addCoverage = (patientId: string, body: unknown) =>
      api('POST', `/patients/${patientId}/coverages`, { body, idempotencyKey: uniqueKey() });
    const member = () => `M${randomBytes(4).toString('hex')}`;

    test('POST answers 201 with the coverage as registered', async () => {
      const patientId = await patient();
      const body = {
        planId: ACTIVE_PLAN.id,
        memberNumber: member(),
        dependentCode: '01',
        memberSurname: 'Mokoena',
        memberInitials: 'T.M.',
        startDate: practiceDate(svc, -30),
        endDate: practiceDate(svc, 300),
      };
      const answer = await addCoverage(patientId, body);
      assert.equal(answer.status, 201, answer.text);
      const { id, ...rest } = answer.body;
      assert.match(id, /^cov_/);
      assert.deepEqual(rest, { object: 'coverage', patientId, ...body, active: true });
      assert.ok(answer.headers.get('location'), 'Location is set');
      const minimal = await addCoverage(patientId, { planId: ACTIVE_PLAN.id, memberNumber: 'X1' });
      assert.equal(minimal.status, 201, minimal.text);
      assert.equal(minimal.body.dependentCode, null);
      assert.equal(minimal.body.memberSurname, null, 'with no dependant code the member is the patient');
      assert.equal(minimal.body.startDate, null);
      assert.equal(minimal.body.endDate, null);
      assert.equal(minimal.body.active, true);
    });

    test('an unknown planId, or an endDate before startDate, is 422 naming the field; all at once', async () => {
      const patientId = await patient();
      refusedWith(
        await addCoverage(patientId, { planId: 'pln_no_such_plan', memberNumber: member() }),
        422,
        'validation_failed',
        ['planId'],
      );
      refusedWith(
        await addCoverage(patientId, {
          planId: ACTIVE_PLAN.id,
          memberNumber: member(),
          startDate: practiceDate(svc, 0),
          endDate: practiceDate(svc, -1),
        }),
        422,
        'validation_failed',
        ['endDate'],
      );
      refusedWith(
        await addCoverage(patientId, {
          planId: 'pln_nope',
          memberNumber: member(),
          startDate: '2026-03-02',
          endDate: '2026-03-01',
        }),
        422,
        'validation_failed',
        ['endDate', 'planId'],
      );
      const sameDay = await addCoverage(patientId, {
        planId: ACTIVE_PLAN.id,
        memberNumber: member(),
        startDate: practiceDate(svc, -1),
        endDate: practiceDate(svc, -1),
      });
      assert.equal(sameDay.status, 201, sameDay.text);
      refusedWith(await addCoverage(patientId, { planId: ACTIVE_PLAN.id }), 422, 'validation_failed', [
        'memberNumber',
      ]);
      refusedWith(
        await addCoverage(patientId, {
          planId: ACTIVE_PLAN.id,
          memberNumber: member(),
          startDate: '2026-02-30',
        }),
        422,
        'validation_failed',
        ['startDate'],
      );
      const listed = await api('GET', `/patients/${patientId}/coverages`);
      assert.deepEqual(
        listed.body.data.map((c: { id: string }) => c.id),
        [sameDay.body.id],
        'refusals made nothing',
      );
    });

    test("an unknown patient, or another practice's, is 404 for both POST and GET", async () => {
      const other = await svc.newPractice();
      const theirs = await apiClient(svc, other.key)('POST', '/patients', {
        body: patientBody(),
        idempotencyKey: uniqueKey(),
      });
      assert.equal(theirs.status, 201, theirs.text);
      for (const patientId of [theirs.body.id, 'pat_doesnotexist000000']) {
        refusedWith(
          await addCoverage(patientId, { planId: ACTIVE_PLAN.id, memberNumber: member() }),
          404,
          'not_found',
        );
        refusedWith(await api('GET', `/patients/${patientId}/coverages`), 404, 'not_found');
      }
      const theirList = await apiClient(svc, other.key)('GET', `/patients/${theirs.body.id}/coverages`);
      assert.deepEqual(theirList.body.data, []);
    });

    test('active is false for an inactive plan, a past endDate or a future startDate; true otherwise', async () => {
      const patientId = await patient();
      const cases: Array<[string, Record<string, unknown>, boolean]> = [
        ['inactive plan', { planId: INACTIVE_PLAN.id }, false],
        [
          'inactive plan within dates',
          { planId: INACTIVE_PLAN.id, startDate: practiceDate(svc, -10), endDate: practiceDate(svc, 10) },
          false,
        ],
        ['ended yesterday', { planId: ACTIVE_PLAN.id, endDate: practiceDate(svc, -1) }, false],
        ['starts tomorrow', { planId: ACTIVE_PLAN.id, startDate: practiceDate(svc, 1) }, false],
        [
          'ended last year',
          { planId: ACTIVE_PLAN.id, startDate: practiceDate(svc, -700), endDate: practiceDate(svc, -365) },
          false,
        ],
        ['open dates', { planId: ACTIVE_PLAN.id }, true],
        ['ends today', { planId: ACTIVE_PLAN.id, endDate: practiceDate(svc, 0) }, true],
        ['started today', { planId: ACTIVE_PLAN.id, startDate: practiceDate(svc, 0) }, true],
        [
          'within dates',
          { planId: ACTIVE_PLAN.id, startDate: practiceDate(svc, -10), endDate: practiceDate(svc, 10) },
          true,
        ],
      ];
      for (const [label, fields, active] of cases) {
        const answer = await addCoverage(patientId, { memberNumber: member(), ...fields });
        assert.equal(answer.status, 201, `${label}: ${answer.text}`);
        assert.equal(answer.body.active, active, label);
      }
      const listed = await api('GET', `/patients/${patientId}/coverages`);
      assert.deepEqual(
        listed.body.data.map((c: { active: boolean }) => c.active),
        cases.map(([, , active]) => active),
      );
    });

    test("GET lists a patient's coverages in the order registered, and only theirs", async () => {
      const patientId = await patient();
      const otherPatient = await patient();
      const registered: string[] = [];
      for (const plan of [PLANS.at(-1)!, INACTIVE_PLAN, PLANS[0]!, ACTIVE_PLAN]) {
        const answer = await addCoverage(patientId, { planId: plan.id, memberNumber: member() });
        assert.equal(answer.status, 201, answer.text);
        registered.push(answer.body.id);
        await addCoverage(otherPatient, { planId: plan.id, memberNumber: member() });
      }
      const answer = await api('GET', `/patients/${patientId}/coverages`);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.object, 'list');
      assert.equal(answer.body.hasMore, false);
      assert.equal(answer.body.nextCursor, null);
      assert.deepEqual(
        answer.body.data.map((c: { id: string }) => c.id),
        registered,
      );
      for (const c of answer.body.data) {
        assert.equal(c.object, 'coverage');
        assert.equal(c.patientId, patientId);
      }
      const empty = await api('GET', `/patients/${await patient()}/coverages`);
      assert.deepEqual(empty.body.data, []);
    });
  });
});
