// Code systems (GET /code-systems, POST /code-systems, GET and PUT /code-systems/{id}): published systems
// first, the usage and owner filters, page bounds and cursors, the url a practice's own system gets from
// its name, name and usage bounds, duplicates, and full replacement (name fixed, published systems
// read-only, another practice's system unseen). Codes in a system: code-systems-concepts.test.ts; shared suites:
// code-systems-contract.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  apiClient,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';
const TARIFF_URL = 'urn:service:codesystem:tariff';
const ALL_USAGES = [
  'procedure',
  'condition',
  'observation',
  'medication',
  'allergy',
  'immunization',
  'family-history',
  'body-site',
  'severity',
];

describeEachBackend('code systems', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  async function practiceApi(): Promise<{ practice: TestPractice; api: ReturnType<typeof apiClient> }> {
    const practice = await svc.newPractice();
    return { practice, api: apiClient(svc, practice.key) };
  }

  async function createSystem(api: ReturnType<typeof apiClient>, body: Record<string, unknown>) {
    const answer = await api('POST', '/code-systems', { body, idempotencyKey: uniqueKey() });
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  }

  async function everyPage(
    api: ReturnType<typeof apiClient>,
    query: string,
    limit: number,
  ): Promise<Array<{ id: string; owner: string }>> {
    const seen: Array<{ id: string; owner: string }> = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const q = `${query}${query ? '&' : ''}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const answer = await api('GET', `/code-systems?${q}`);
      assert.equal(answer.status, 200, answer.text);
      assert.ok(answer.body.data.length <= limit);
      seen.push(...answer.body.data);
      if (!answer.body.hasMore) {
        assert.equal(answer.body.nextCursor, null);
        return seen;
      }
      assert.equal(answer.body.data.length, limit, 'a page with more after it is full');
      assert.equal(typeof answer.body.nextCursor, 'string');
      cursor = answer.body.nextCursor;
    }
    throw new Error('paging did not end');
  }

  describe('GET /code-systems', () => {
    test("lists the published systems first, then only this practice's own", async () => {
      const { practice, api } = await practiceApi();
      const other = await practiceApi();
      const mine = await createSystem(api, { name: 'Aardvark codes', usage: ['procedure'] });
      const theirs = await createSystem(other.api, { name: 'Aardvark codes', usage: ['procedure'] });
      const answer = await api('GET', '/code-systems?limit=100');
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.object, 'list');
      assert.equal(answer.body.hasMore, false);
      assert.equal(answer.body.nextCursor, null);
      const owners = answer.body.data.map((s: { owner: string }) => s.owner);
      assert.deepEqual(
        owners,
        [...owners].sort((a, b) => (a === b ? 0 : a === 'service' ? -1 : 1)),
      );
      assert.equal(owners.at(-1), 'practice');
      const icd = answer.body.data.find((s: { url: string }) => s.url === ICD10_URL);
      assert.equal(icd.object, 'code_system');
      assert.equal(icd.id, 'cs_icd10');
      assert.equal(icd.owner, 'service');
      assert.deepEqual(icd.usage, ['condition']);
      assert.equal(icd.status, 'active');
      const tariff = answer.body.data.find((s: { url: string }) => s.url === TARIFF_URL);
      assert.equal(tariff.owner, 'service');
      assert.ok(tariff.usage.includes('procedure'));
      const ids = answer.body.data.map((s: { id: string }) => s.id);
      assert.ok(ids.includes(mine.id));
      assert.ok(!ids.includes(theirs.id), "another practice's system is not listed");
      assert.ok(!answer.text.includes(other.practice.practiceId));
      assert.ok(mine.url.includes(practice.practiceId));
    });

    test('usage keeps only systems whose codes are picked for that kind of record', async () => {
      const { api } = await practiceApi();
      const observed = await createSystem(api, {
        name: 'Observations',
        usage: ['observation', 'procedure'],
      });
      const conditions = await api('GET', '/code-systems?usage=condition&limit=100');
      assert.equal(conditions.status, 200, conditions.text);
      const urls = conditions.body.data.map((s: { url: string }) => s.url);
      assert.ok(urls.includes(ICD10_URL));
      assert.ok(!urls.includes(TARIFF_URL));
      assert.ok(!urls.includes(observed.url));
      for (const s of conditions.body.data) assert.ok(s.usage.includes('condition'), s.url);
      const observations = await api('GET', '/code-systems?usage=observation&limit=100');
      const observedIds = observations.body.data.map((s: { id: string }) => s.id);
      assert.ok(observedIds.includes(observed.id));
      for (const s of observations.body.data) assert.ok(s.usage.includes('observation'), s.url);
      const procedures = await api('GET', '/code-systems?usage=procedure&limit=100');
      const procedureUrls = procedures.body.data.map((s: { url: string }) => s.url);
      assert.ok(procedureUrls.includes(TARIFF_URL) && procedureUrls.includes(observed.url));
      refusedWith(await api('GET', '/code-systems?usage=surgery'), 400, 'invalid_request', ['usage']);
    });

    test("owner=service keeps the published systems, owner=practice only the practice's own", async () => {
      const { api } = await practiceApi();
      const a = await createSystem(api, { name: 'Owned A', usage: ['procedure'] });
      const b = await createSystem(api, { name: 'Owned B', usage: ['condition'] });
      const service = await api('GET', '/code-systems?owner=service&limit=100');
      assert.equal(service.status, 200, service.text);
      assert.ok(service.body.data.length >= 2);
      for (const s of service.body.data) assert.equal(s.owner, 'service');
      const practice = await api('GET', '/code-systems?owner=practice&limit=100');
      assert.deepEqual(practice.body.data.map((s: { id: string }) => s.id).sort(), [a.id, b.id].sort());
      const both = await api('GET', '/code-systems?owner=practice&usage=condition');
      assert.deepEqual(
        both.body.data.map((s: { id: string }) => s.id),
        [b.id],
      );
      refusedWith(await api('GET', '/code-systems?owner=practitioner'), 400, 'invalid_request', ['owner']);
    });

    test('limit is 1 to 100, default 50; outside it the answer is 400 naming limit', async () => {
      const { api } = await practiceApi();
      for (const limit of ['0', '101', '-1', 'abc', '1.5']) {
        refusedWith(await api('GET', `/code-systems?limit=${limit}`), 400, 'invalid_request', ['limit']);
      }
      const one = await api('GET', '/code-systems?limit=1');
      assert.equal(one.status, 200, one.text);
      assert.equal(one.body.data.length, 1);
      assert.equal(one.body.hasMore, true);
      assert.equal((await api('GET', '/code-systems?limit=100')).status, 200);
      // 55 own systems: the default page holds 50
      for (let i = 0; i < 55; i++) {
        await createSystem(api, { name: `Bulk ${String(i).padStart(2, '0')}`, usage: ['procedure'] });
      }
      const defaults = await api('GET', '/code-systems');
      assert.equal(defaults.body.data.length, 50);
      assert.equal(defaults.body.hasMore, true);
      const max = await api('GET', '/code-systems?limit=100');
      assert.ok(max.body.data.length > 50);
    });

    test('paging with nextCursor returns every system once, in the order of one big page', async () => {
      const { api } = await practiceApi();
      for (const name of ['Delta', 'alpha', 'Charlie', 'Bravo', 'Echo']) {
        await createSystem(api, { name: `${name} set`, usage: ['procedure'] });
      }
      const whole = await api('GET', '/code-systems?limit=100');
      const ids = whole.body.data.map((s: { id: string }) => s.id);
      assert.equal(new Set(ids).size, ids.length);
      const paged = await everyPage(api, '', 2);
      assert.deepEqual(
        paged.map((s) => s.id),
        ids,
      );
      const ownPaged = await everyPage(api, 'owner=practice', 2);
      assert.equal(ownPaged.length, 5);
      assert.deepEqual(
        ownPaged.map((s) => s.id),
        ids.slice(-5),
      );
    });

    test('a cursor used with other filters, tampered with or made up is 400 invalid_cursor', async () => {
      const { api } = await practiceApi();
      for (const name of ['One', 'Two', 'Three']) await createSystem(api, { name, usage: ['procedure'] });
      const first = await api('GET', '/code-systems?owner=practice&limit=1');
      const cursor: string = first.body.nextCursor;
      assert.equal(typeof cursor, 'string');
      // the cursor works with the filters it was issued for
      const next = await api(
        'GET',
        `/code-systems?owner=practice&limit=1&cursor=${encodeURIComponent(cursor)}`,
      );
      assert.equal(next.status, 200, next.text);
      assert.notEqual(next.body.data[0].id, first.body.data[0].id);
      const [payload, signature] = cursor.split('.');
      // flip a character whose bits all count (the last base64 character of the signature carries padding)
      const flipped = `${payload}.${signature![0] === 'A' ? 'B' : 'A'}${signature!.slice(1)}`;
      const forgedPayload = `${Buffer.from(JSON.stringify([0, '', ''])).toString('base64url')}.${signature}`;
      for (const query of [
        `limit=1&cursor=${encodeURIComponent(cursor)}`,
        `owner=service&limit=1&cursor=${encodeURIComponent(cursor)}`,
        `owner=practice&usage=procedure&limit=1&cursor=${encodeURIComponent(cursor)}`,
        `owner=practice&limit=1&cursor=${encodeURIComponent(flipped)}`,
        `owner=practice&limit=1&cursor=${encodeURIComponent(forgedPayload)}`,
        `owner=practice&limit=1&cursor=${encodeURIComponent(payload!)}`,
        'owner=practice&limit=1&cursor=not-a-cursor',
      ]) {
        const answer = await api('GET', `/code-systems?${query}`);
        assert.equal(answer.status, 400, `${query}: ${answer.text}`);
        assert.equal(answer.body.code, 'invalid_cursor', query);
      }
    });
  });

  describe('POST /code-systems', () => {
    test('creates a practice-owned system whose url comes from the practice id and the slug of its name', async () => {
      const { practice, api } = await practiceApi();
      const body = {
        name: 'Wound Care Extras',
        title: 'Wound care',
        description: 'Our own wound care codes',
        usage: ['procedure', 'body-site'],
      };
      const answer = await api('POST', '/code-systems', { body, idempotencyKey: uniqueKey() });
      assert.equal(answer.status, 201, answer.text);
      const { id, updatedAt, ...rest } = answer.body;
      assert.match(id, /^cs_/);
      assert.ok(Math.abs(Date.parse(updatedAt) - svc.clock.now().getTime()) < 60_000, updatedAt);
      assert.deepEqual(rest, {
        object: 'code_system',
        url: `urn:service:organization:${practice.practiceId}:codesystem:wound-care-extras`,
        name: 'Wound Care Extras',
        title: 'Wound care',
        description: 'Our own wound care codes',
        owner: 'practice',
        usage: ['procedure', 'body-site'],
        status: 'active',
      });
      assert.ok(
        answer.headers.get('location')?.endsWith(`/code-systems/${id}`),
        answer.headers.get('location') ?? '',
      );
      const read = await api('GET', `/code-systems/${id}`);
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body, answer.body);
      const minimal = await createSystem(api, { name: 'Minimal', usage: ['condition'] });
      assert.equal(minimal.title, null);
      assert.equal(minimal.description, null);
    });

    test('name is required and at most 60 characters', async () => {
      const { api } = await practiceApi();
      const sixty = `N${'x'.repeat(59)}`;
      assert.equal((await createSystem(api, { name: sixty, usage: ['procedure'] })).name, sixty);
      const tooLong = await api('POST', '/code-systems', {
        body: { name: `M${'x'.repeat(60)}`, usage: ['procedure'] },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(tooLong, 422, 'validation_failed', ['name']);
      const missing = await api('POST', '/code-systems', {
        body: { usage: ['procedure'] },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(missing, 422, 'validation_failed', ['name']);
      assert.equal(missing.body.errors[0].code, 'required');
    });

    test('usage needs 1 to 9 known values', async () => {
      const { api } = await practiceApi();
      const nine = await createSystem(api, { name: 'Everything', usage: ALL_USAGES });
      assert.deepEqual(nine.usage, ALL_USAGES);
      const cases: Array<[unknown, string]> = [
        [[], 'usage'],
        [[...ALL_USAGES, 'procedure'], 'usage'],
        [['surgery'], 'usage.0'],
        [['procedure', 'billing'], 'usage.1'],
      ];
      for (const [usage, field] of cases) {
        const answer = await api('POST', '/code-systems', {
          body: { name: `Usage ${randomBytes(3).toString('hex')}`, usage },
          idempotencyKey: uniqueKey(),
        });
        refusedWith(answer, 422, 'validation_failed', [field]);
      }
      const missing = await api('POST', '/code-systems', {
        body: { name: 'No usage' },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(missing, 422, 'validation_failed', ['usage']);
      // nothing was made by the refusals
      const own = await api('GET', '/code-systems?owner=practice');
      assert.deepEqual(
        own.body.data.map((s: { id: string }) => s.id),
        [nine.id],
      );
    });

    test('the same name twice is 409 duplicate naming the first; another practice may use it', async () => {
      const { api } = await practiceApi();
      const first = await createSystem(api, { name: 'Home Visits', usage: ['procedure'] });
      const again = await api('POST', '/code-systems', {
        body: { name: 'Home Visits', usage: ['condition'] },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(again, 409, 'duplicate');
      assert.ok(again.body.detail.includes(first.id), again.body.detail);
      // a name with the same slug makes the same url: also a duplicate
      const sameSlug = await api('POST', '/code-systems', {
        body: { name: 'home   visits', usage: ['procedure'] },
        idempotencyKey: uniqueKey(),
      });
      refusedWith(sameSlug, 409, 'duplicate');
      const other = await practiceApi();
      const theirs = await createSystem(other.api, { name: 'Home Visits', usage: ['procedure'] });
      assert.notEqual(theirs.url, first.url);
    });
  });

  describe('PUT /code-systems/{id}', () => {
    test('replaces title, description and usage in full; the url and name stay', async () => {
      const { api } = await practiceApi();
      const created = await createSystem(api, {
        name: 'Replace Me',
        title: 'Old title',
        description: 'Old description',
        usage: ['procedure', 'observation'],
      });
      const replaced = await api('PUT', `/code-systems/${created.id}`, {
        body: { name: 'Replace Me', usage: ['condition'] },
      });
      assert.equal(replaced.status, 200, replaced.text);
      assert.equal(replaced.body.id, created.id);
      assert.equal(replaced.body.url, created.url);
      assert.equal(replaced.body.name, 'Replace Me');
      assert.equal(replaced.body.title, null, 'a field left out is cleared');
      assert.equal(replaced.body.description, null);
      assert.deepEqual(replaced.body.usage, ['condition']);
      assert.equal(replaced.body.owner, 'practice');
      assert.ok(Date.parse(replaced.body.updatedAt) >= Date.parse(created.updatedAt));
      const read = await api('GET', `/code-systems/${created.id}`);
      assert.deepEqual(read.body, replaced.body);
      const full = await api('PUT', `/code-systems/${created.id}`, {
        body: {
          name: 'Replace Me',
          title: 'New title',
          description: 'New description',
          usage: ['severity', 'allergy'],
        },
      });
      assert.equal(full.status, 200, full.text);
      assert.equal(full.body.title, 'New title');
      assert.equal(full.body.description, 'New description');
      assert.deepEqual(full.body.usage, ['severity', 'allergy']);
    });

    test('changing the name is 422 naming name, and nothing changes', async () => {
      const { api } = await practiceApi();
      const created = await createSystem(api, { name: 'Fixed Name', title: 'Kept', usage: ['procedure'] });
      const renamed = await api('PUT', `/code-systems/${created.id}`, {
        body: { name: 'Other Name', title: 'Changed', usage: ['condition'] },
      });
      refusedWith(renamed, 422, 'validation_failed', ['name']);
      const read = await api('GET', `/code-systems/${created.id}`);
      assert.deepEqual(read.body, created);
    });

    test('the request has the bounds of CodeSystemRequest', async () => {
      const { api } = await practiceApi();
      const created = await createSystem(api, { name: 'Bounded', usage: ['procedure'] });
      const cases: Array<[unknown, string[]]> = [
        [{ name: 'Bounded', usage: [] }, ['usage']],
        [{ name: 'Bounded', usage: [...ALL_USAGES, 'condition'] }, ['usage']],
        [{ name: 'Bounded', usage: ['nonsense'] }, ['usage.0']],
        [{ name: 'Bounded' }, ['usage']],
        [{ usage: ['procedure'] }, ['name']],
        [{ name: 'x'.repeat(61), usage: ['procedure'] }, ['name']],
      ];
      for (const [body, fields] of cases) {
        refusedWith(
          await api('PUT', `/code-systems/${created.id}`, { body }),
          422,
          'validation_failed',
          fields,
        );
      }
    });

    test('a published system is 422 business_rule and stays as it was', async () => {
      const { api } = await practiceApi();
      const before = await api('GET', '/code-systems/cs_icd10');
      assert.equal(before.status, 200, before.text);
      const answer = await api('PUT', '/code-systems/cs_icd10', {
        body: { name: before.body.name, title: 'Hijacked', usage: ['condition'] },
      });
      refusedWith(answer, 422, 'business_rule');
      const afterwards = await api('GET', '/code-systems/cs_icd10');
      assert.deepEqual(afterwards.body, before.body);
    });

    test("an unknown id or another practice's system answers 404, alike", async () => {
      const { api } = await practiceApi();
      const other = await practiceApi();
      const theirs = await createSystem(other.api, {
        name: 'Private',
        title: 'Theirs',
        usage: ['procedure'],
      });
      const body = { name: 'Private', title: 'Mine now', usage: ['procedure'] };
      const foreign = await api('PUT', `/code-systems/${theirs.id}`, { body });
      const unknown = await api('PUT', `/code-systems/cs_${randomBytes(11).toString('hex')}`, { body });
      refusedWith(foreign, 404, 'not_found');
      refusedWith(unknown, 404, 'not_found');
      assert.equal(foreign.body.detail, unknown.body.detail);
      assert.equal((await api('GET', `/code-systems/${theirs.id}`)).status, 404);
      const untouched = await other.api('GET', `/code-systems/${theirs.id}`);
      assert.equal(untouched.body.title, 'Theirs');
    });
  });
});
