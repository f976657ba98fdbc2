// Codes in a code system (POST, GET and DELETE /code-systems/{id}/concepts): the CodeConceptRequest
// bounds, defaultPrice in the practice's currency, duplicates, published systems read-only, look-up by
// exact code or part of the wording with paging, and deleting a code only while no visit, invoice line and
// saved price uses it. Systems themselves: code-systems.test.ts; shared suites: code-systems-contract.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RECENT_DAY } from './billing-fixtures.ts';
import { addClient } from './contract-suites.ts';
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

type Api = ReturnType<typeof apiClient>;

describeEachBackend('codes in a code system', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  async function practiceApi(): Promise<{ practice: TestPractice; api: Api }> {
    const practice = await svc.newPractice();
    return { practice, api: apiClient(svc, practice.key) };
  }

  async function ownSystem(api: Api, usage: string[] = ['procedure', 'condition']) {
    const answer = await api('POST', '/code-systems', {
      body: { name: `Own ${randomBytes(4).toString('hex')}`, usage },
      idempotencyKey: uniqueKey(),
    });
    assert.equal(answer.status, 201, answer.text);
    return answer.body as { id: string; url: string };
  }

  const addConcept = (api: Api, systemId: string, body: unknown) =>
    api('POST', `/code-systems/${systemId}/concepts`, { body, idempotencyKey: uniqueKey() });

  async function concept(api: Api, systemId: string, body: Record<string, unknown>) {
    const answer = await addConcept(api, systemId, body);
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  }

  async function conceptIdOf(api: Api, systemId: string, code: string): Promise<string> {
    const answer = await api('GET', `/code-systems/${systemId}/concepts?code=${encodeURIComponent(code)}`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.data.length, 1, answer.text);
    return answer.body.data[0].id;
  }

  async function patientOf(api: Api): Promise<string> {
    const answer = await api('POST', '/patients', { body: patientBody(), idempotencyKey: uniqueKey() });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  }

  function visit(patientId: string, practitionerId: string, diagnoses: unknown[], procedures: unknown[]) {
    const end = svc.clock.now().getTime() - 60 * 60 * 1000;
    return {
      patientId,
      practitionerId,
      start: new Date(end - 30 * 60 * 1000).toISOString(),
      end: new Date(end).toISOString(),
      diagnoses,
      procedures,
    };
  }

  describe('POST /code-systems/{id}/concepts', () => {
    test("adds a code; defaultPrice is in the practice's currency", async () => {
      const made = await svc.admin('POST', '/practices', { name: 'Dollar practice', currency: 'USD' });
      assert.equal(made.status, 201, made.text);
      const client = await addClient(svc, made.body.id);
      const api = apiClient(svc, client.key);
      const system = await ownSystem(api);
      const body = {
        code: 'WC-01.a_Z',
        display: 'Wound dressing, large',
        definition: 'Dressing of a wound over 10 cm',
        usage: ['body-site'],
        defaultPrice: 12345,
      };
      const answer = await addConcept(api, system.id, body);
      assert.equal(answer.status, 201, answer.text);
      const { id, updatedAt, ...rest } = answer.body;
      assert.match(id, /^cc_/);
      assert.ok(Math.abs(Date.parse(updatedAt) - svc.clock.now().getTime()) < 60_000, updatedAt);
      assert.deepEqual(rest, {
        object: 'code_concept',
        codeSystemId: system.id,
        system: system.url,
        code: 'WC-01.a_Z',
        display: 'Wound dressing, large',
        definition: 'Dressing of a wound over 10 cm',
        usage: ['procedure', 'condition', 'body-site'],
        defaultPrice: 12345,
        currency: 'USD',
      });
      assert.ok(answer.headers.get('location'), 'Location is set');
      const listed = await api('GET', `/code-systems/${system.id}/concepts?code=WC-01.a_Z`);
      assert.deepEqual(listed.body.data, [answer.body]);

      const bare = await concept(api, system.id, { code: 'BARE', display: 'No price' });
      assert.equal(bare.defaultPrice, null);
      assert.equal(bare.currency, null);
      assert.equal(bare.definition, null);
      assert.deepEqual(bare.usage, ['procedure', 'condition'], "a code's usage is its system's at least");
      const overlapping = await concept(api, system.id, {
        code: 'BOTH',
        display: 'Also a condition',
        usage: ['condition', 'severity'],
      });
      assert.deepEqual(
        overlapping.usage,
        ['procedure', 'condition', 'severity'],
        'each kind once, the system first',
      );

      const { api: zarApi } = await practiceApi();
      const zarSystem = await ownSystem(zarApi);
      assert.equal(
        (await concept(zarApi, zarSystem.id, { code: 'P1', display: 'x', defaultPrice: 0 })).currency,
        'ZAR',
      );
    });

    test('code is 1 to 32 letters, digits, dots, underscores or hyphens; display at most 500', async () => {
      const { api } = await practiceApi();
      const system = await ownSystem(api);
      const thirtyTwo = `A${'b'.repeat(31)}`;
      assert.equal((await concept(api, system.id, { code: thirtyTwo, display: 'ok' })).code, thirtyTwo);
      const fiveHundred = 'd'.repeat(500);
      assert.equal(
        (await concept(api, system.id, { code: 'LONGDISPLAY', display: fiveHundred })).display,
        fiveHundred,
      );
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ code: `C${'c'.repeat(32)}`, display: 'x' }, 'code'],
        [{ code: 'a b', display: 'x' }, 'code'],
        [{ code: '', display: 'x' }, 'code'],
        [{ code: 'slash/code', display: 'x' }, 'code'],
        [{ code: 'plus+', display: 'x' }, 'code'],
        [{ code: 'ümlaut', display: 'x' }, 'code'],
        [{ display: 'x' }, 'code'],
        [{ code: 'OK1', display: 'e'.repeat(501) }, 'display'],
        [{ code: 'OK2' }, 'display'],
        [{ code: 'OK3', display: 'x', defaultPrice: 1.5 }, 'defaultPrice'],
        [{ code: 'OK4', display: 'x', defaultPrice: -1 }, 'defaultPrice'],
        [{ code: 'OK5', display: 'x', usage: ['nonsense'] }, 'usage.0'],
      ];
      for (const [body, field] of cases) {
        refusedWith(await addConcept(api, system.id, body), 422, 'validation_failed', [field]);
      }
      const listed = await api('GET', `/code-systems/${system.id}/concepts`);
      assert.deepEqual(
        listed.body.data.map((c: { code: string }) => c.code).sort(),
        [thirtyTwo, 'LONGDISPLAY'].sort(),
      );
    });

    test('a code already in the system is 409 duplicate naming it; another system may hold it', async () => {
      const { api } = await practiceApi();
      const system = await ownSystem(api);
      const first = await concept(api, system.id, { code: 'DUP1', display: 'First' });
      const again = await addConcept(api, system.id, { code: 'DUP1', display: 'Second' });
      refusedWith(again, 409, 'duplicate');
      assert.ok(again.body.detail.includes(first.id), again.body.detail);
      const kept = await api('GET', `/code-systems/${system.id}/concepts?code=DUP1`);
      assert.equal(kept.body.data[0].display, 'First');
      const second = await ownSystem(api);
      assert.equal((await addConcept(api, second.id, { code: 'DUP1', display: 'Elsewhere' })).status, 201);
    });

    test("a published system is 422 business_rule; an unknown or another practice's system 404", async () => {
      const { api } = await practiceApi();
      refusedWith(
        await addConcept(api, 'cs_tariff', { code: '9999', display: 'Mine' }),
        422,
        'business_rule',
      );
      refusedWith(
        await addConcept(api, 'cs_icd10', { code: 'X99.9', display: 'Mine' }),
        422,
        'business_rule',
      );
      const none = await api('GET', '/code-systems/cs_tariff/concepts?code=9999');
      assert.deepEqual(none.body.data, []);
      refusedWith(await addConcept(api, 'cs_unknownunknown', { code: 'A', display: 'x' }), 404, 'not_found');
      const other = await practiceApi();
      const theirs = await ownSystem(other.api);
      refusedWith(await addConcept(api, theirs.id, { code: 'A', display: 'x' }), 404, 'not_found');
      assert.deepEqual((await other.api('GET', `/code-systems/${theirs.id}/concepts`)).body.data, []);
    });
  });

  describe('GET /code-systems/{id}/concepts', () => {
    test('code finds exactly one code; search matches part of the wording, ignoring case', async () => {
      const { api } = await practiceApi();
      const exact = await api('GET', '/code-systems/cs_icd10/concepts?code=J06.9');
      assert.equal(exact.status, 200, exact.text);
      assert.equal(exact.body.data.length, 1);
      const j069 = exact.body.data[0];
      assert.equal(j069.object, 'code_concept');
      assert.equal(j069.system, ICD10_URL);
      assert.equal(j069.codeSystemId, 'cs_icd10');
      assert.equal(j069.code, 'J06.9');
      assert.match(j069.display, /upper respiratory infection/i);
      const icd10 = await api('GET', '/code-systems/cs_icd10');
      assert.ok(icd10.body.usage.length > 0, icd10.text);
      assert.deepEqual(
        j069.usage,
        icd10.body.usage,
        "a published code is picked for its system's kinds of record",
      );
      assert.deepEqual(
        (await api('GET', '/code-systems/cs_icd10/concepts?code=J06')).body.data,
        [],
        'not a prefix match',
      );
      assert.deepEqual((await api('GET', '/code-systems/cs_icd10/concepts?code=j06.9')).body.data, []);

      const search = await api('GET', '/code-systems/cs_icd10/concepts?search=PHARYNGITIS&limit=100');
      assert.equal(search.status, 200, search.text);
      const codes = search.body.data.map((c: { code: string }) => c.code);
      assert.ok(codes.includes('J02.9'), codes.join());
      for (const c of search.body.data) assert.match(`${c.display} ${c.code}`, /pharyngitis/i);
      const middle = await api(
        'GET',
        `/code-systems/cs_icd10/concepts?search=${encodeURIComponent('ESSENTIAL (PRIM')}`,
      );
      assert.deepEqual(
        middle.body.data.map((c: { code: string }) => c.code),
        ['I10'],
      );
      const tariff = await api('GET', '/code-systems/cs_tariff/concepts?code=0190');
      assert.equal(tariff.body.data[0].system, TARIFF_URL);
      assert.equal((await api('GET', '/code-systems/cs_icd10/concepts?search=zzzzqqq')).body.data.length, 0);

      const system = await ownSystem(api);
      await concept(api, system.id, { code: 'SUT1', display: 'Suture Removal, simple' });
      await concept(api, system.id, { code: 'DRS1', display: 'Dressing' });
      const own = await api('GET', `/code-systems/${system.id}/concepts?search=removal`);
      assert.deepEqual(
        own.body.data.map((c: { code: string }) => c.code),
        ['SUT1'],
      );
      const bothFilters = await api('GET', `/code-systems/${system.id}/concepts?code=DRS1&search=removal`);
      assert.deepEqual(bothFilters.body.data, []);
    });

    test('pages with nextCursor return every code once, in code order; bad limits and cursors are 400', async () => {
      const { api } = await practiceApi();
      const system = await ownSystem(api);
      for (const code of ['E5', 'A1', 'D4', 'B2', 'C3'])
        await concept(api, system.id, { code, display: `Code ${code}` });
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await api(
          'GET',
          `/code-systems/${system.id}/concepts?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(answer.status, 200, answer.text);
        seen.push(...answer.body.data.map((c: { code: string }) => c.code));
        cursor = answer.body.nextCursor;
        assert.equal(answer.body.hasMore, cursor !== null);
        pages++;
      } while (cursor && pages < 10);
      assert.deepEqual(seen, ['A1', 'B2', 'C3', 'D4', 'E5']);
      assert.equal(pages, 3);

      const icdFirst = await api('GET', '/code-systems/cs_icd10/concepts?limit=3');
      assert.equal(icdFirst.body.data.length, 3);
      assert.equal(icdFirst.body.hasMore, true);
      const icdNext = await api(
        'GET',
        `/code-systems/cs_icd10/concepts?limit=3&cursor=${encodeURIComponent(icdFirst.body.nextCursor)}`,
      );
      assert.equal(icdNext.status, 200, icdNext.text);
      assert.ok(icdNext.body.data[0].code > icdFirst.body.data[2].code);

      const first = await api('GET', `/code-systems/${system.id}/concepts?limit=2`);
      const own = encodeURIComponent(first.body.nextCursor);
      for (const path of [
        `/code-systems/${system.id}/concepts?limit=2&search=code&cursor=${own}`,
        `/code-systems/cs_icd10/concepts?limit=2&cursor=${own}`,
        `/code-systems?limit=2&cursor=${own}`,
        `/code-systems/${system.id}/concepts?limit=2&cursor=garbage`,
      ]) {
        refusedWith(await api('GET', path), 400, 'invalid_cursor');
      }
      for (const limit of ['0', '101']) {
        refusedWith(
          await api('GET', `/code-systems/cs_icd10/concepts?limit=${limit}`),
          400,
          'invalid_request',
          ['limit'],
        );
      }
      const other = await practiceApi();
      refusedWith(await other.api('GET', `/code-systems/${system.id}/concepts`), 404, 'not_found');
    });
  });

  describe('DELETE /code-systems/{id}/concepts/{conceptId}', () => {
    test('deletes an unused code: 200 {object, id, deleted: true}; then it is gone', async () => {
      const { api } = await practiceApi();
      const system = await ownSystem(api);
      const made = await concept(api, system.id, { code: 'GONE', display: 'To delete' });
      const kept = await concept(api, system.id, { code: 'KEPT', display: 'To keep' });
      const answer = await api('DELETE', `/code-systems/${system.id}/concepts/${made.id}`);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { object: 'code_concept', id: made.id, deleted: true });
      const listed = await api('GET', `/code-systems/${system.id}/concepts`);
      assert.deepEqual(
        listed.body.data.map((c: { id: string }) => c.id),
        [kept.id],
      );
      refusedWith(await api('DELETE', `/code-systems/${system.id}/concepts/${made.id}`), 404, 'not_found');
      // the code can be added again once deleted
      assert.equal((await addConcept(api, system.id, { code: 'GONE', display: 'Back' })).status, 201);
    });

    test("a code still on a visit's diagnoses or procedures is 422 business_rule and stays", async () => {
      const { practice, api } = await practiceApi();
      const system = await ownSystem(api, ['condition', 'procedure']);
      const diagnosis = await concept(api, system.id, { code: 'DX1', display: 'Our diagnosis' });
      const procedure = await concept(api, system.id, { code: 'PX1', display: 'Our procedure' });
      const unused = await concept(api, system.id, { code: 'FREE', display: 'Unused' });
      const patientId = await patientOf(api);
      const encounter = await api('POST', '/encounters', {
        idempotencyKey: uniqueKey(),
        body: visit(
          patientId,
          practice.practitionerId,
          [
            { system: ICD10_URL, code: 'J06.9' },
            { system: system.url, code: 'DX1' },
          ],
          [
            { system: TARIFF_URL, code: '0190' },
            { system: system.url, code: 'PX1' },
          ],
        ),
      });
      assert.equal(encounter.status, 201, encounter.text);
      for (const used of [diagnosis, procedure]) {
        const answer = await api('DELETE', `/code-systems/${system.id}/concepts/${used.id}`);
        refusedWith(answer, 422, 'business_rule');
        assert.equal(
          (await api('GET', `/code-systems/${system.id}/concepts?code=${used.code}`)).body.data.length,
          1,
        );
      }
      assert.equal((await api('DELETE', `/code-systems/${system.id}/concepts/${unused.id}`)).status, 200);
    });

    test("a code still on a draft invoice line or a line's diagnoses is 422 business_rule until the line goes", async () => {
      const { practice, api } = await practiceApi();
      const system = await ownSystem(api, ['condition', 'procedure']);
      const lineCode = await concept(api, system.id, { code: 'LX1', display: 'Our line code' });
      const lineDiagnosis = await concept(api, system.id, { code: 'LD1', display: 'Our line diagnosis' });
      const patientId = await patientOf(api);
      const encounter = await api('POST', '/encounters', {
        idempotencyKey: uniqueKey(),
        body: visit(
          patientId,
          practice.practitionerId,
          [{ system: ICD10_URL, code: 'J06.9' }],
          [{ system: TARIFF_URL, code: '0190' }],
        ),
      });
      assert.equal(encounter.status, 201, encounter.text);
      const billed = await api('POST', `/encounters/${encounter.body.id}/bill`, {
        idempotencyKey: uniqueKey(),
      });
      assert.equal(billed.status, 201, billed.text);
      const invoiceId = billed.body.invoice.id;
      assert.equal(billed.body.invoice.status, 'draft');
      const added = await api('POST', `/invoices/${invoiceId}/line-items`, {
        idempotencyKey: uniqueKey(),
        body: {
          system: system.url,
          code: 'LX1',
          serviceDate: RECENT_DAY,
          quantity: 1,
          unitPrice: 5000,
          diagnoses: [{ system: system.url, code: 'LD1', primary: true }],
        },
      });
      assert.equal(added.status, 201, added.text);
      const line = added.body.lineItems.find((l: { code: string }) => l.code === 'LX1');
      for (const used of [lineCode, lineDiagnosis]) {
        const answer = await api('DELETE', `/code-systems/${system.id}/concepts/${used.id}`);
        refusedWith(answer, 422, 'business_rule');
        assert.match(answer.body.detail, /invoice line/, answer.text);
        assert.equal(
          (await api('GET', `/code-systems/${system.id}/concepts?code=${used.code}`)).body.data.length,
          1,
        );
      }
      const removed = await api('DELETE', `/invoices/${invoiceId}/line-items/${line.id}`);
      assert.equal(removed.status, 200, removed.text);
      for (const freed of [lineCode, lineDiagnosis]) {
        const answer = await api('DELETE', `/code-systems/${system.id}/concepts/${freed.id}`);
        assert.equal(answer.status, 200, answer.text);
      }
    });

    test('a code with a saved price is 422 business_rule until the price is deleted', async () => {
      const { practice, api } = await practiceApi();
      const system = await ownSystem(api);
      const priced = await concept(api, system.id, {
        code: 'PRICED',
        display: 'Priced code',
        defaultPrice: 1000,
      });
      const favourite = await concept(api, system.id, { code: 'FAV', display: 'Favourite code' });
      const price = await svc.admin('POST', `/practices/${practice.practiceId}/prices`, {
        system: system.url,
        code: 'PRICED',
        amount: 25000,
      });
      assert.equal(price.status, 201, price.text);
      const fav = await svc.admin('POST', `/practices/${practice.practiceId}/prices`, {
        system: system.url,
        code: 'FAV',
        amount: 30000,
        practitionerId: practice.practitionerId,
      });
      assert.equal(fav.status, 201, fav.text);
      refusedWith(
        await api('DELETE', `/code-systems/${system.id}/concepts/${priced.id}`),
        422,
        'business_rule',
      );
      refusedWith(
        await api('DELETE', `/code-systems/${system.id}/concepts/${favourite.id}`),
        422,
        'business_rule',
      );
      assert.equal(
        (await svc.admin('DELETE', `/practices/${practice.practiceId}/prices/${price.body.id}`)).status,
        200,
      );
      const freed = await api('DELETE', `/code-systems/${system.id}/concepts/${priced.id}`);
      assert.equal(freed.status, 200, freed.text);
    });

    test('a code of a published system is 422 business_rule; unknown or foreign ids are 404', async () => {
      const { api } = await practiceApi();
      const j069 = await conceptIdOf(api, 'cs_icd10', 'J06.9');
      refusedWith(await api('DELETE', `/code-systems/cs_icd10/concepts/${j069}`), 422, 'business_rule');
      assert.equal(await conceptIdOf(api, 'cs_icd10', 'J06.9'), j069);
      const t0190 = await conceptIdOf(api, 'cs_tariff', '0190');
      refusedWith(await api('DELETE', `/code-systems/cs_tariff/concepts/${t0190}`), 422, 'business_rule');
      // a published concept id under the wrong system is not found there
      refusedWith(await api('DELETE', `/code-systems/cs_tariff/concepts/${j069}`), 404, 'not_found');

      const system = await ownSystem(api);
      refusedWith(
        await api('DELETE', `/code-systems/${system.id}/concepts/cc_nosuchconcept`),
        404,
        'not_found',
      );
      const other = await practiceApi();
      const theirSystem = await ownSystem(other.api);
      const theirs = await concept(other.api, theirSystem.id, { code: 'THEIRS', display: 'Theirs' });
      const viaTheirSystem = await api('DELETE', `/code-systems/${theirSystem.id}/concepts/${theirs.id}`);
      const viaMySystem = await api('DELETE', `/code-systems/${system.id}/concepts/${theirs.id}`);
      refusedWith(viaTheirSystem, 404, 'not_found');
      refusedWith(viaMySystem, 404, 'not_found');
      assert.equal(
        (await other.api('GET', `/code-systems/${theirSystem.id}/concepts?code=THEIRS`)).body.data.length,
        1,
      );
    });
  });
});
