// Practice prices and practitioner favourites kept by the operator (POST, GET and DELETE
// /admin/v1/practices/{id}/prices): setting a price or a favourite, setting it again replaces the
// amount, codes and practitioners that are not the practice's are refused, listing and deleting.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  apiClient,
  call,
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { refusedWith } from './support/refusals.ts';

const TARIFF_URL = 'urn:service:codesystem:tariff';
const ICD10_URL = 'http://hl7.org/fhir/sid/icd-10';

describeEachBackend('practice prices', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  const setPrice = (practiceId: string, body: unknown) =>
    svc.admin('POST', `/practices/${practiceId}/prices`, body);
  const listPrices = (practiceId: string) => svc.admin('GET', `/practices/${practiceId}/prices`);

  test('sets a practice price and a practitioner favourite', async () => {
    const practice = await svc.newPractice();
    const answer = await setPrice(practice.practiceId, { system: TARIFF_URL, code: '0190', amount: 61000 });
    assert.equal(answer.status, 201, answer.text);
    const { id, updatedAt, ...rest } = answer.body;
    assert.match(id, /^prc_/);
    assert.ok(Math.abs(Date.parse(updatedAt) - svc.clock.now().getTime()) < 60_000, updatedAt);
    assert.deepEqual(rest, {
      object: 'price',
      practiceId: practice.practiceId,
      system: TARIFF_URL,
      code: '0190',
      amount: 61000,
      currency: 'ZAR',
      practitionerId: null,
      kind: 'practice',
    });
    const favourite = await setPrice(practice.practiceId, {
      system: TARIFF_URL,
      code: '0190',
      amount: 58000,
      practitionerId: practice.practitionerId,
    });
    assert.equal(favourite.status, 201, favourite.text);
    assert.equal(favourite.body.kind, 'favorite');
    assert.equal(favourite.body.practitionerId, practice.practitionerId);
    assert.equal(favourite.body.amount, 58000);
    assert.notEqual(favourite.body.id, id, 'a favourite is a price of its own');

    const usd = await svc.admin('POST', '/practices', { name: 'Dollar practice', currency: 'USD' });
    const priced = await setPrice(usd.body.id, { system: TARIFF_URL, code: '0191', amount: 0 });
    assert.equal(priced.status, 201, priced.text);
    assert.equal(priced.body.currency, 'USD');
    assert.equal(priced.body.amount, 0);
  });

  test('setting a price again replaces its amount, for the practice and for each practitioner', async () => {
    const practice = await svc.newPractice();
    const second = await svc.admin('POST', `/practices/${practice.practiceId}/practitioners`, {
      name: 'Dr Two',
    });
    assert.equal(second.status, 201, second.text);
    const first = await setPrice(practice.practiceId, { system: TARIFF_URL, code: '0192', amount: 100000 });
    const favOne = await setPrice(practice.practiceId, {
      system: TARIFF_URL,
      code: '0192',
      amount: 90000,
      practitionerId: practice.practitionerId,
    });
    const favTwo = await setPrice(practice.practiceId, {
      system: TARIFF_URL,
      code: '0192',
      amount: 95000,
      practitionerId: second.body.id,
    });
    for (const a of [first, favOne, favTwo]) assert.equal(a.status, 201, a.text);

    const again = await setPrice(practice.practiceId, { system: TARIFF_URL, code: '0192', amount: 120000 });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.body.id, first.body.id, 'the same price, not a second one');
    assert.equal(again.body.amount, 120000);
    const favAgain = await setPrice(practice.practiceId, {
      system: TARIFF_URL,
      code: '0192',
      amount: 91000,
      practitionerId: practice.practitionerId,
    });
    assert.equal(favAgain.body.id, favOne.body.id);
    assert.equal(favAgain.body.amount, 91000);

    const listed = await listPrices(practice.practiceId);
    assert.equal(listed.status, 200, listed.text);
    const byId = new Map(listed.body.data.map((p: { id: string; amount: number }) => [p.id, p.amount]));
    assert.equal(listed.body.data.length, 3);
    assert.equal(byId.get(first.body.id), 120000);
    assert.equal(byId.get(favOne.body.id), 91000);
    assert.equal(byId.get(favTwo.body.id), 95000, "another practitioner's favourite is untouched");
  });

  test('a code its system does not hold, or a practitioner not of the practice, is 422 naming it', async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    refusedWith(
      await setPrice(practice.practiceId, { system: TARIFF_URL, code: '9999', amount: 1 }),
      422,
      'validation_failed',
      ['code'],
    );
    refusedWith(
      await setPrice(practice.practiceId, { system: TARIFF_URL, code: 'J06.9', amount: 1 }),
      422,
      'validation_failed',
      ['code'],
    );
    refusedWith(
      await setPrice(practice.practiceId, { system: 'urn:nowhere', code: '0190', amount: 1 }),
      422,
      'validation_failed',
      ['code'],
    );
    refusedWith(
      await setPrice(practice.practiceId, {
        system: TARIFF_URL,
        code: '0190',
        amount: 1,
        practitionerId: 'prt_0000000000000000000000',
      }),
      422,
      'validation_failed',
      ['practitionerId'],
    );
    refusedWith(
      await setPrice(practice.practiceId, {
        system: TARIFF_URL,
        code: '0190',
        amount: 1,
        practitionerId: other.practitionerId,
      }),
      422,
      'validation_failed',
      ['practitionerId'],
    );
    refusedWith(
      await setPrice(practice.practiceId, {
        system: ICD10_URL,
        code: 'NOPE',
        amount: 1,
        practitionerId: 'prt_x',
      }),
      422,
      'validation_failed',
      ['code', 'practitionerId'],
    );
    for (const [body, field] of [
      [{ system: TARIFF_URL, code: '0190', amount: -1 }, 'amount'],
      [{ system: TARIFF_URL, code: '0190', amount: 1.5 }, 'amount'],
      [{ system: TARIFF_URL, code: '0190' }, 'amount'],
      [{ system: TARIFF_URL, amount: 10 }, 'code'],
    ] as const) {
      refusedWith(await setPrice(practice.practiceId, body), 422, 'validation_failed', [field]);
    }
    assert.deepEqual((await listPrices(practice.practiceId)).body.data, [], 'nothing was saved');
  });

  test("a code of the practice's own system can be priced; another practice's own system cannot", async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    const addOwn = async (p: TestPractice) => {
      const api = apiClient(svc, p.key);
      const system = await api('POST', '/code-systems', {
        body: { name: `Own ${randomBytes(3).toString('hex')}`, usage: ['procedure'] },
        idempotencyKey: uniqueKey(),
      });
      assert.equal(system.status, 201, system.text);
      const concept = await api('POST', `/code-systems/${system.body.id}/concepts`, {
        body: { code: 'OWN1', display: 'Own code' },
        idempotencyKey: uniqueKey(),
      });
      assert.equal(concept.status, 201, concept.text);
      return system.body.url as string;
    };
    const mine = await addOwn(practice);
    const theirs = await addOwn(other);
    const own = await setPrice(practice.practiceId, { system: mine, code: 'OWN1', amount: 4200 });
    assert.equal(own.status, 201, own.text);
    assert.equal(own.body.system, mine);
    refusedWith(
      await setPrice(practice.practiceId, { system: theirs, code: 'OWN1', amount: 4200 }),
      422,
      'validation_failed',
      ['code'],
    );
  });

  test("lists only this practice's prices; deletes one; unknown ids and practices are 404", async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    const a = await setPrice(practice.practiceId, { system: TARIFF_URL, code: '0191', amount: 80000 });
    const b = await setPrice(practice.practiceId, {
      system: TARIFF_URL,
      code: '0190',
      amount: 50000,
      practitionerId: practice.practitionerId,
    });
    const theirs = await setPrice(other.practiceId, { system: TARIFF_URL, code: '0190', amount: 1 });
    for (const x of [a, b, theirs]) assert.equal(x.status, 201, x.text);

    const listed = await listPrices(practice.practiceId);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.object, 'list');
    assert.equal(listed.body.hasMore, false);
    assert.deepEqual(listed.body.data.map((p: { id: string }) => p.id).sort(), [a.body.id, b.body.id].sort());
    assert.deepEqual(
      listed.body.data.find((p: { id: string }) => p.id === a.body.id),
      a.body,
    );

    refusedWith(
      await svc.admin('DELETE', `/practices/${practice.practiceId}/prices/${theirs.body.id}`),
      404,
      'not_found',
    );
    const deleted = await svc.admin('DELETE', `/practices/${practice.practiceId}/prices/${a.body.id}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { object: 'price', id: a.body.id, deleted: true });
    assert.deepEqual(
      (await listPrices(practice.practiceId)).body.data.map((p: { id: string }) => p.id),
      [b.body.id],
    );
    refusedWith(
      await svc.admin('DELETE', `/practices/${practice.practiceId}/prices/${a.body.id}`),
      404,
      'not_found',
    );
    assert.equal(
      (await listPrices(other.practiceId)).body.data.length,
      1,
      'the other practice keeps its price',
    );

    // once deleted, the price can be set afresh
    const reset = await setPrice(practice.practiceId, { system: TARIFF_URL, code: '0191', amount: 81000 });
    assert.equal(reset.status, 201, reset.text);
    assert.notEqual(reset.body.id, a.body.id);

    refusedWith(await listPrices('org_nosuchpractice000000'), 404, 'not_found');
    refusedWith(
      await setPrice('org_nosuchpractice000000', { system: TARIFF_URL, code: '0190', amount: 1 }),
      404,
      'not_found',
    );
  });

  test('the prices API needs the admin token; an API key is not enough', async () => {
    const practice = await svc.newPractice();
    const body = { system: TARIFF_URL, code: '0190', amount: 1 };
    const path = `/admin/v1/practices/${practice.practiceId}/prices`;
    for (const token of [undefined, practice.key, 'adm_wrong']) {
      const answer = await call(svc.baseUrl, 'POST', path, { ...(token ? { token } : {}), body });
      assert.equal(answer.status, 401, answer.text);
      assert.equal((await call(svc.baseUrl, 'GET', path, token ? { token } : {})).status, 401);
    }
    assert.deepEqual((await listPrices(practice.practiceId)).body.data, []);
  });
});
